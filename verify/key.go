package verify

import (
	"github.com/oasisprotocol/curve25519-voi/curve"
)

// strongKey reports whether k is the canonical encoding of an Ed25519 point that is not of
// small order. Shard signatures are checked under ZIP-215, where a small-order key accepts
// signatures on every message: a bundle attesting such a key would let anyone sign shards,
// and fabricate equivocation, in its peer's name. Honest key generation never yields one.
func strongKey(k []byte) bool {
	var y curve.CompressedEdwardsY
	if _, err := y.SetBytes(k); err != nil || !y.IsCanonicalVartime() {
		return false
	}
	var p curve.EdwardsPoint
	if _, err := p.SetCompressedY(&y); err != nil {
		return false
	}
	return !p.IsSmallOrder()
}
