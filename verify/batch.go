package verify

import (
	"crypto/ed25519"

	voi "github.com/oasisprotocol/curve25519-voi/primitives/ed25519"
)

// CheckShardSignatures checks many shards at once: errs[i] is what
// CheckShardSignature(shards[i], keys[i]) returns, nil for a valid shard. keys[i] is the
// attested key of shards[i]; a shard without a key (keys shorter than shards) is malformed.
// The result has len(shards) entries. Safe for concurrent use; it does not modify its
// arguments.
func CheckShardSignatures(shards []*Shard, keys []ed25519.PublicKey) []error {
	hs := make([]*ShardHeader, len(shards))
	sigs := make([][]byte, len(shards))
	for i, s := range shards {
		if s != nil {
			hs[i], sigs[i] = &s.Header, s.Sig
		}
	}
	errs := CheckHeaderSignatures(hs, sigs, keys)
	for i, s := range shards {
		switch {
		case s == nil:
			errs[i] = errorf(ClassMalformed, nil, "no shard")
		case errs[i] == nil:
			errs[i] = checkPayload(s)
		}
	}
	return errs
}

// CheckHeaderSignatures checks many header signatures at once: errs[i] is what
// CheckHeaderSignature(hs[i], sigs[i], keys[i]) returns, nil for a valid signature. A
// missing signature or key (sigs or keys shorter than hs) counts as empty, so malformed.
//
// Well-formed entries are verified together in one ZIP-215 batch (random linear
// combination, cofactored equation). If the batch holds, every one of them is valid under
// the single rule. If it fails, each is checked on its own with the single check, so the
// result equals the single checks item for item; a batch with an invalid signature costs
// about as much as single checks plus the failed batch.
//
// The batch's random coefficients come from the curve25519-voi library, which reads
// crypto/rand when given no reader, as here. They must be unpredictable to whoever made
// the signatures, so they are not taken from a seed; verdicts do not depend on them.
func CheckHeaderSignatures(hs []*ShardHeader, sigs [][]byte, keys []ed25519.PublicKey) []error {
	errs := make([]error, len(hs))
	msgs := make([][]byte, len(hs))
	var batch []int // indexes of well-formed entries
	for i, h := range hs {
		msg, err := headerMessage(h, at(sigs, i), at(keys, i))
		if err != nil {
			errs[i] = err
			continue
		}
		msgs[i] = msg
		batch = append(batch, i)
	}
	if len(batch) == 0 || batchValid(batch, keys, msgs, sigs) {
		return errs
	}
	for _, i := range batch {
		errs[i] = checkSig(keys[i], msgs[i], sigs[i])
	}
	return errs
}

// batchValid reports whether the entries at idx all verify, under ZIP-215, as one batch.
// The coefficients come from crypto/rand inside the library (nil reader).
func batchValid(idx []int, keys []ed25519.PublicKey, msgs, sigs [][]byte) bool {
	bv := voi.NewBatchVerifierWithCapacity(len(idx))
	for _, i := range idx {
		bv.AddWithOptions(voi.PublicKey(keys[i]), msgs[i], sigs[i], zip215)
	}
	return bv.VerifyBatchOnly(nil)
}

// at returns xs[i], or the zero value when xs is shorter.
func at[T any](xs []T, i int) T {
	var zero T
	if i < len(xs) {
		return xs[i]
	}
	return zero
}
