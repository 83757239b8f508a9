package training

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPeerSliceDeterministic: the same inputs give the same indices, in increasing order,
// distinct and in range, whole chunks of the requested share; another peer or seed gives
// another slice.
func TestPeerSliceDeterministic(t *testing.T) {
	const n, seed, f = 100_003, 5, 0.3
	a, err := PeerSlice(n, seed, "peer-a", f)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := PeerSlice(n, seed, "peer-a", f)
	if !slices.Equal(a, b) {
		t.Fatal("two calls with the same inputs differ")
	}
	checkSlice(t, a, n)
	m := (n + SliceChunk - 1) / SliceChunk
	k := int(math.Ceil(f * float64(m)))
	if got := chunksOf(a); len(got) != k {
		t.Fatalf("%d chunks, want ceil(%v x %d) = %d", len(got), f, m, k)
	}
	for name, c := range map[string][]int{"peer": must(PeerSlice(n, seed, "peer-b", f)), "seed": must(PeerSlice(n, seed+1, "peer-a", f))} {
		if slices.Equal(a, c) {
			t.Fatalf("another %s gave the same slice", name)
		}
	}
}

// TestPeerSliceRederived: another party, knowing only the data set size, the seed, the
// peer ID and the fraction, derives the same slice through the reference definition.
func TestPeerSliceRederived(t *testing.T) {
	own, err := PeerSlice(5000, 42, "12D3KooWExample", 0.25)
	if err != nil {
		t.Fatal(err)
	}
	if other := naivePeerSlice(5000, 42, "12D3KooWExample", 0.25); !slices.Equal(own, other) {
		t.Fatalf("re-derived slice differs:\n%v\n%v", own[:8], other[:8])
	}
}

// TestPeerSliceSmallAndWhole: a fraction of 1 is every sample; a tiny one still gives a
// chunk; a data set smaller than a chunk is one chunk.
func TestPeerSliceSmallAndWhole(t *testing.T) {
	if all := must(PeerSlice(1000, 1, "p", 1)); !slices.Equal(all, Range(0, 1000)) {
		t.Fatalf("fraction 1 gave %d samples", len(all))
	}
	if s := must(PeerSlice(1000, 1, "p", 1e-9)); len(chunksOf(s)) != 1 {
		t.Fatalf("tiny fraction gave %d chunks", len(chunksOf(s)))
	}
	if s := must(PeerSlice(10, 1, "p", 0.5)); !slices.Equal(s, Range(0, 10)) {
		t.Fatalf("one partial chunk gave %v", s)
	}
}

func TestPeerSliceBadInput(t *testing.T) {
	for _, c := range []struct {
		n    int
		peer string
		f    float64
	}{{0, "p", 0.5}, {-3, "p", 0.5}, {100, "", 0.5}, {100, "p", 0}, {100, "p", -0.1}, {100, "p", 1.01}, {100, "p", math.NaN()}, {100, "p", math.Inf(1)}} {
		if _, err := PeerSlice(c.n, 1, c.peer, c.f); !errors.Is(err, ErrData) {
			t.Errorf("n=%d peer=%q f=%v: error %v, want ErrData", c.n, c.peer, c.f, err)
		}
	}
}

// TestPeerSliceOverlapNearExpectation: on a large data set, two peers' slices overlap about
// as two independent uniform choices of k of m chunks do: n(k/m)² samples in expectation,
// the chunk count hypergeometric. Every pair among eight peers stays within six standard
// deviations (fixed seeds and IDs: the test is deterministic) and the mean within two
// standard deviations of the mean.
func TestPeerSliceOverlapNearExpectation(t *testing.T) {
	const n, f, peers = 1<<20 + 37, 0.25, 8
	m := (n + SliceChunk - 1) / SliceChunk
	k := int(math.Ceil(f * float64(m)))
	p := float64(k) / float64(m)
	mean := float64(k) * p
	sd := math.Sqrt(float64(k) * p * (1 - p) * float64(m-k) / float64(m-1))
	sets := make([]map[int]bool, peers)
	for i := range sets {
		s := must(PeerSlice(n, 2026, fmt.Sprintf("12D3KooWpeer%d", i), f))
		sets[i] = make(map[int]bool)
		for _, c := range chunksOf(s) {
			sets[i][c] = true
		}
	}
	total, pairs := 0.0, 0
	for i := 0; i < peers; i++ {
		for j := i + 1; j < peers; j++ {
			x := 0
			for c := range sets[i] {
				if sets[j][c] {
					x++
				}
			}
			if math.Abs(float64(x)-mean) > 6*sd {
				t.Errorf("peers %d and %d share %d chunks, expected %.0f ± %.0f", i, j, x, mean, sd)
			}
			total += float64(x)
			pairs++
		}
	}
	// Pairs are not independent; bound the mean by the single-pair sd as a safe margin.
	if avg := total / float64(pairs); math.Abs(avg-mean) > 2*sd {
		t.Errorf("mean overlap %.1f chunks, expected %.0f ± %.0f", avg, mean, sd)
	}
}

// TestPeerSliceMatchesNaive is a property test: on random sizes, seeds, peers and fractions
// PeerSlice equals the naive reference of its definition.
func TestPeerSliceMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for i := 0; i < 300; i++ {
		n := 1 + rng.IntN(3000)
		seed := rng.Uint64()
		peer := fmt.Sprintf("%x", rng.Uint64()>>rng.IntN(64))
		f := rng.Float64()
		if f == 0 || i%10 == 0 {
			f = 1
		}
		got, err := PeerSlice(n, seed, peer, f)
		if err != nil {
			t.Fatal(err)
		}
		if want := naivePeerSlice(n, seed, peer, f); !slices.Equal(got, want) {
			t.Fatalf("n=%d seed=%d peer=%q f=%v: slices differ (%d samples, naive %d; first %v, naive %v)",
				n, seed, peer, f, len(got), len(want), got[:min(4, len(got))], want[:min(4, len(want))])
		}
	}
}

// naivePeerSlice follows PeerSlice's documented definition as literally as possible: a
// chunk is in the slice when fewer than k chunks come before it by (rank, index), and the
// slice is its samples in increasing order. O(m²).
func naivePeerSlice(n int, seed uint64, peer string, f float64) []int {
	m := (n + SliceChunk - 1) / SliceChunk
	k := max(1, int(math.Ceil(f*float64(m))))
	k = min(k, m)
	h := sha256.New()
	h.Write([]byte("lowband/slice/v1\x00"))
	binary.Write(h, binary.BigEndian, seed)
	h.Write([]byte(peer))
	key := h.Sum(nil)
	rank := make([]uint64, m)
	for c := range rank {
		h := sha256.New()
		h.Write(key)
		binary.Write(h, binary.BigEndian, uint64(c))
		rank[c] = binary.BigEndian.Uint64(h.Sum(nil)[:8])
	}
	var out []int
	for i := 0; i < n; i++ {
		c, before := i/SliceChunk, 0
		for d := range rank {
			if rank[d] < rank[c] || (rank[d] == rank[c] && d < c) {
				before++
			}
		}
		if before < k {
			out = append(out, i)
		}
	}
	return out
}

func checkSlice(t *testing.T, s []int, n int) {
	t.Helper()
	for j, i := range s {
		if i < 0 || i >= n {
			t.Fatalf("index %d outside [0, %d)", i, n)
		}
		if j > 0 && s[j-1] >= i {
			t.Fatalf("indices not increasing and distinct at %d: %d then %d", j, s[j-1], i)
		}
	}
}

// chunksOf lists the chunks whose samples s holds, each once.
func chunksOf(s []int) []int {
	var out []int
	for _, i := range s {
		if c := i / SliceChunk; len(out) == 0 || out[len(out)-1] != c {
			out = append(out, c)
		}
	}
	return out
}

func must(s []int, err error) []int {
	if err != nil {
		panic(err)
	}
	return s
}

func BenchmarkPeerSlice4M(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := PeerSlice(4<<20, 1, "12D3KooWbench", 0.25); err != nil {
			b.Fatal(err)
		}
	}
}
