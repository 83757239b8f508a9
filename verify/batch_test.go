package verify

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha512"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/oasisprotocol/curve25519-voi/curve"
	"github.com/oasisprotocol/curve25519-voi/curve/scalar"
)

// verdict is an error reduced to what callers may look at: nil or not, class, payload
// mismatch, and the message.
func verdict(err error) string {
	if err == nil {
		return "valid"
	}
	return fmt.Sprintf("%s|%v|%v", ClassOf(err), errors.Is(err, ErrPayloadMismatch), err)
}

// checkAgainstSingle runs the batch check and compares every entry with the single check.
func checkAgainstSingle(t *testing.T, shards []*Shard, keys []ed25519.PublicKey) []error {
	t.Helper()
	errs := CheckShardSignatures(shards, keys)
	if len(errs) != len(shards) {
		t.Fatalf("%d results for %d shards", len(errs), len(shards))
	}
	for i := range shards {
		var single error
		if i < len(keys) {
			single = CheckShardSignature(shards[i], keys[i])
		} else {
			single = CheckShardSignature(shards[i], nil)
		}
		if verdict(errs[i]) != verdict(single) {
			t.Errorf("shard %d: batch %q, single %q", i, verdict(errs[i]), verdict(single))
		}
	}
	return errs
}

// mutations make a shard invalid in one way each; "valid" and "torsion" leave it valid.
var mutations = []string{"valid", "torsion", "wrong key", "flipped sig", "flipped header", "payload", "short sig"}

func mixedShard(t *testing.T, rng *rand.Rand, i int, kind string) (*Shard, ed25519.PublicKey) {
	t.Helper()
	h := testHeader()
	h.Index, h.Count = uint32(i), uint32(i+1)
	payload := []byte(fmt.Sprintf("payload %d", rng.Uint64()))
	key := testKey(byte(rng.IntN(4) + 1))
	s, err := SignShard(key, h, payload)
	if err != nil {
		t.Fatal(err)
	}
	pub := key.Public().(ed25519.PublicKey)
	switch kind {
	case "torsion":
		pub = torsionSign(t, s, uint64(rng.Uint32()))
	case "wrong key":
		pub = testKey(9).Public().(ed25519.PublicKey)
	case "flipped sig":
		s.Sig[rng.IntN(len(s.Sig))] ^= 1 << rng.IntN(8)
	case "flipped header":
		s.Header.Round ^= 1 << rng.IntN(64)
	case "payload":
		s.Payload = append(s.Payload, 'x')
	case "short sig":
		s.Sig = s.Sig[:ed25519.SignatureSize-1]
	}
	return s, pub
}

// Batch results equal single results on random mixes, for several batch sizes.
func TestCheckShardSignaturesMatchesSingle(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 7, 64} {
		for trial := range 3 {
			shards := make([]*Shard, n)
			keys := make([]ed25519.PublicKey, n)
			kinds := map[string]int{}
			for i := range n {
				kind := mutations[rng.IntN(len(mutations))]
				if trial == 0 && i == 0 {
					kind = "flipped sig" // every size has at least one failing batch
				}
				kinds[kind]++
				shards[i], keys[i] = mixedShard(t, rng, i, kind)
			}
			errs := checkAgainstSingle(t, shards, keys)
			bad := 0
			for _, err := range errs {
				if err != nil {
					bad++
				}
			}
			if want := n - kinds["valid"] - kinds["torsion"]; bad != want {
				t.Errorf("n=%d trial %d: %d invalid, want %d (%v)", n, trial, bad, want, kinds)
			}
		}
	}
}

func TestCheckShardSignaturesAllValid(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 64
	shards := make([]*Shard, n)
	keys := make([]ed25519.PublicKey, n)
	for i := range n {
		shards[i], keys[i] = mixedShard(t, rng, i, mutations[i%2]) // valid and torsion
	}
	for i, err := range checkAgainstSingle(t, shards, keys) {
		if err != nil {
			t.Errorf("shard %d: %v", i, err)
		}
	}
	// The batch equation itself holds (no fallback to single checks), and fails with one
	// bad signature among them.
	idx, msgs, sigs := batchInputs(t, shards)
	if !batchValid(idx, keys, msgs, sigs) {
		t.Fatal("all-valid batch fails the batch equation")
	}
	sigs[17] = bytes.Clone(sigs[17])
	sigs[17][40] ^= 1
	if batchValid(idx, keys, msgs, sigs) {
		t.Fatal("batch with a bad signature passes the batch equation")
	}
}

func batchInputs(t *testing.T, shards []*Shard) ([]int, [][]byte, [][]byte) {
	t.Helper()
	idx := make([]int, len(shards))
	msgs := make([][]byte, len(shards))
	sigs := make([][]byte, len(shards))
	for i, s := range shards {
		msg, err := s.Header.SigningBytes()
		if err != nil {
			t.Fatal(err)
		}
		idx[i], msgs[i], sigs[i] = i, msg, s.Sig
	}
	return idx, msgs, sigs
}

func TestCheckShardSignaturesEdges(t *testing.T) {
	if errs := CheckShardSignatures(nil, nil); len(errs) != 0 {
		t.Errorf("empty batch: %v", errs)
	}
	if errs := CheckHeaderSignatures(nil, nil, nil); len(errs) != 0 {
		t.Errorf("empty header batch: %v", errs)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	s0, k0 := mixedShard(t, rng, 0, "valid")
	s1, _ := mixedShard(t, rng, 1, "valid")
	// A nil shard and a shard without a key are malformed; the others are unaffected.
	errs := checkAgainstSingle(t, []*Shard{s0, nil, s1}, []ed25519.PublicKey{k0, k0})
	if errs[0] != nil || ClassOf(errs[1]) != ClassMalformed || ClassOf(errs[2]) != ClassMalformed {
		t.Errorf("nil shard and missing key: %v", errs)
	}
}

// torsionSign re-signs s with a fresh key so that R carries a component of order 2: R =
// rB + T. Such a signature is valid under ZIP-215 (cofactored) but not under the
// cofactorless equation crypto/ed25519 uses; a cofactorless batch would accept it for half
// of its random coefficients. It returns the key.
func torsionSign(t *testing.T, s *Shard, seed uint64) ed25519.PublicKey {
	t.Helper()
	wide := func(parts ...[]byte) *scalar.Scalar {
		h := sha512.New()
		for _, p := range parts {
			h.Write(p)
		}
		x, err := scalar.New().SetBytesModOrderWide(h.Sum(nil))
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	seedBytes := fmt.Appendf(nil, "torsion %d", seed)
	a, r := wide([]byte("a"), seedBytes), wide([]byte("r"), seedBytes)
	var A, R curve.EdwardsPoint
	A.MulBasepoint(curve.ED25519_BASEPOINT_TABLE, a)
	R.MulBasepoint(curve.ED25519_BASEPOINT_TABLE, r)
	R.Add(&R, point(t, order2Point()))
	aBytes, rBytes := compress(&A), compress(&R)
	msg, err := s.Header.SigningBytes()
	if err != nil {
		t.Fatal(err)
	}
	S := scalar.New().Mul(wide(rBytes, aBytes, msg), a)
	S.Add(S, r)
	sBytes := make([]byte, 32)
	if err := S.ToBytes(sBytes); err != nil {
		t.Fatal(err)
	}
	s.Sig = append(rBytes, sBytes...)
	return aBytes
}

// order2Point is the canonical encoding of (0, -1), the point of order 2.
func order2Point() []byte {
	b := bytes.Repeat([]byte{0xff}, 32)
	b[0], b[31] = 0xec, 0x7f
	return b
}

func point(t *testing.T, enc []byte) *curve.EdwardsPoint {
	t.Helper()
	c, err := curve.NewCompressedEdwardsYFromBytes(enc)
	if err != nil {
		t.Fatal(err)
	}
	p, err := curve.NewEdwardsPoint().SetCompressedY(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func compress(p *curve.EdwardsPoint) []byte {
	var c curve.CompressedEdwardsY
	c.SetEdwardsPoint(p)
	return bytes.Clone(c[:])
}

// ZIP-215 edge cases: crypto/ed25519 rejects them; single and batch checks agree, every
// time the batch draws new coefficients.
func TestZIP215EdgeCases(t *testing.T) {
	h := testHeader()
	h.PayloadCID = PayloadCID(nil)
	msg, err := h.SigningBytes()
	if err != nil {
		t.Fatal(err)
	}
	torsion := &Shard{Version: ShardVersion, Header: h}
	torsionKey := torsionSign(t, torsion, 7)

	identity := make([]byte, 32) // canonical encoding of the identity point (0, 1)
	identity[0] = 1
	nonCanonicalIdentity := bytes.Repeat([]byte{0xff}, 32) // y = p + 1
	nonCanonicalIdentity[0], nonCanonicalIdentity[31] = 0xee, 0x7f
	groupOrder := []byte{0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2,
		0xde, 0xf9, 0xde, 0x14, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10}

	for _, c := range []struct {
		name  string
		key   []byte
		sig   []byte
		valid bool
	}{
		// R = rB + T for a point T of order 2.
		{"torsion in R", torsionKey, torsion.Sig, true},
		// The identity as key (small order), R the identity in a non-canonical encoding and
		// S = 0: ZIP-215 accepts it for any message.
		{"small-order key, non-canonical R", identity, append(bytes.Clone(nonCanonicalIdentity), make([]byte, 32)...), true},
		// S = L, the group order: not reduced, refused by every rule.
		{"unreduced S", identity, append(bytes.Clone(identity), groupOrder...), false},
	} {
		if ed25519.Verify(c.key, msg, c.sig) {
			t.Errorf("%s: crypto/ed25519 accepts it; not an edge case", c.name)
		}
		single := CheckHeaderSignature(&h, c.sig, c.key)
		if (single == nil) != c.valid {
			t.Errorf("%s: single check %v, want valid=%v", c.name, single, c.valid)
		}
		hs := []*ShardHeader{&h, &h}
		sigs := [][]byte{c.sig, torsion.Sig}
		keys := []ed25519.PublicKey{c.key, torsionKey}
		for range 16 {
			errs := CheckHeaderSignatures(hs, sigs, keys)
			if verdict(errs[0]) != verdict(single) || errs[1] != nil {
				t.Fatalf("%s: batch %v, single %v", c.name, errs, single)
			}
		}
	}
}
