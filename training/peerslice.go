package training

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
)

// sliceDomain separates PeerSlice's hashes from every other use of the spec's seed.
const sliceDomain = "lowband/slice/v1\x00"

// PeerSlice returns the samples of a data set of n samples that the peer with ID peer trains
// on, given the network's seed and the fraction of the data set each peer takes. It needs
// no coordinator and no knowledge of how many peers exist: the slice is a function of
// (n, seed, peer, fraction) alone, so anyone who knows them re-derives it.
//
// The definition, for other implementations: the samples are cut into m = ⌈n/SliceChunk⌉
// chunks of consecutive indices (chunk c is [c·SliceChunk, min((c+1)·SliceChunk, n))). The
// peer's key is K = SHA-256("lowband/slice/v1\x00" ‖ seed as 8 bytes big-endian ‖ peer),
// and chunk c's rank is the first 8 bytes, big-endian, of SHA-256(K ‖ c as 8 bytes
// big-endian). The peer takes the k = ⌈fraction·m⌉ chunks of least rank (ties to the lower
// chunk), at least one, and the result is their samples in increasing order: distinct, in
// [0, n). The slice for a larger fraction contains the slice for a smaller one.
//
// Properties, modelling SHA-256 as a random function:
//   - Each chunk is in a given peer's slice with probability k/m, and the choices of
//     different peers are independent. Two peers share n·(k/m)² samples in expectation,
//     about the fraction of each one's slice (their chunk overlap is hypergeometric:
//     mean k²/m); N peers together cover 1−(1−k/m)^N of the data set in expectation.
//   - A peer cannot choose its slice except by choosing its identity. Grinding identities
//     is cheap (a key pair per try), so a peer can get a few chosen chunks into its slice
//     (j given chunks cost about (m/k)^j tries) but not a chosen slice. It is harmless: every
//     chunk is the network's public training data, and a peer's contribution is bounded by
//     the content checks and robust aggregation whatever it trained on; the most grinding
//     buys is more weight on some public samples, within that peer's share of the round.
//
// The cost is one SHA-256 of 40 bytes per chunk and a sort of the m ranks; the result holds
// about fraction·n indices. Errors wrap ErrData: n < 1, an empty peer, a fraction outside
// (0, 1].
func PeerSlice(n int, seed uint64, peer string, fraction float64) ([]int, error) {
	if n < 1 || peer == "" || !(fraction > 0 && fraction <= 1) {
		return nil, fmt.Errorf("%w: slice of %v of %d samples for peer %q", ErrData, fraction, n, peer)
	}
	m := (n + SliceChunk - 1) / SliceChunk
	k := min(max(1, int(math.Ceil(fraction*float64(m)))), m)
	chunks := rankChunks(m, seed, peer)[:k]
	slices.Sort(chunks)
	out := make([]int, 0, k*SliceChunk)
	for _, c := range chunks {
		for i := c * SliceChunk; i < min((c+1)*SliceChunk, n); i++ {
			out = append(out, i)
		}
	}
	return out, nil
}

// rankChunks returns the chunks 0..m-1 ordered by their rank for (seed, peer), ties to the
// lower chunk.
func rankChunks(m int, seed uint64, peer string) []int {
	pre := make([]byte, 0, len(sliceDomain)+8+len(peer))
	pre = append(pre, sliceDomain...)
	pre = binary.BigEndian.AppendUint64(pre, seed)
	key := sha256.Sum256(append(pre, peer...))
	type ranked struct {
		rank  uint64
		chunk int
	}
	r := make([]ranked, m)
	var msg [sha256.Size + 8]byte
	copy(msg[:], key[:])
	for c := range r {
		binary.BigEndian.PutUint64(msg[sha256.Size:], uint64(c))
		h := sha256.Sum256(msg[:])
		r[c] = ranked{binary.BigEndian.Uint64(h[:8]), c}
	}
	slices.SortFunc(r, func(a, b ranked) int {
		return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.chunk, b.chunk))
	})
	out := make([]int, m)
	for i, x := range r {
		out[i] = x.chunk
	}
	return out
}
