package compress

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// orthonormalCols returns k orthonormal columns of length m (m × k, row-major), by
// classical Gram-Schmidt on Gaussian vectors: the naive reference's own construction.
func orthonormalCols(rng *rand.Rand, m, k int) []float64 {
	cols := make([][]float64, 0, k)
	for len(cols) < k {
		v := randTensor(rng, "", 1, m).Data
		for _, q := range cols {
			d := dotOf(q, v)
			for i := range v {
				v[i] -= d * q[i]
			}
		}
		n := norm(v)
		for i := range v {
			v[i] /= n
		}
		cols = append(cols, v)
	}
	out := make([]float64, m*k)
	for i := 0; i < m; i++ {
		for c := range cols {
			out[i*k+c] = cols[c][i]
		}
	}
	return out
}

// spectral returns Σ_c σ_c·u_c·v_cᵀ (m × n) for orthonormal u (m × k) and v (n × k).
func spectral(u, v, sigma []float64, m, n int) []float64 {
	k := len(sigma)
	a := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			for c := 0; c < k; c++ {
				a[i*n+j] += sigma[c] * u[i*k+c] * v[j*k+c]
			}
		}
	}
	return a
}

// The derived basis is orthonormal, spans the aggregate's leading left singular vectors in
// order (against the construction's own, the naive reference), drops directions the
// aggregate does not have, and is the same bits every time; a zero or wide matrix, or a
// shared rank of 0, has none. So with the power iteration (the default) and without
// (SharedPowerIters -1).
func TestDeriveBasesFindsTheLeadingSubspace(t *testing.T) {
	for _, iters := range []int{0, 1, -1} {
		deriveBasesFindsTheLeadingSubspace(t, iters)
	}
}

func deriveBasesFindsTheLeadingSubspace(t *testing.T, iters int) {
	rng := newRand(21)
	const m, n = 40, 24
	sigma := []float64{10, 7, 5, 3, 1, 0.5}
	u, v := orthonormalCols(rng, m, len(sigma)), orthonormalCols(rng, n, len(sigma))
	a := Tensor{Name: "w", Shape: []int{m, n}, Data: spectral(u, v, sigma, m, n)}
	wide := randTensor(rng, "wide", 1, 8, 30)
	zero := Tensor{Name: "z", Shape: []int{30, 8}, Data: make([]float64, 240)}
	cfg := Config{SharedRank: 4, MinLowRank: 16, SharedPowerIters: iters}
	bs, err := DeriveBases(cfg, []Tensor{a, wide, zero, randTensor(rng, "b", 1, 24)})
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 1 || bs["w"] == nil {
		t.Fatalf("bases for %v, want only w", slices.Collect(func(yield func(string) bool) {
			for k := range bs {
				yield(k)
			}
		}))
	}
	b := bs["w"]
	if b.Rows != m || b.K != 4 || len(b.U) != m*4 {
		t.Fatalf("basis %d × %d with %d values", b.Rows, b.K, len(b.U))
	}
	for c := 0; c < b.K; c++ {
		for d := 0; d < b.K; d++ {
			var dot, ref float64
			for i := 0; i < m; i++ {
				dot += b.U[i*b.K+c] * b.U[i*b.K+d]
				ref += b.U[i*b.K+c] * u[i*len(sigma)+d]
			}
			want := 0.0
			if c == d {
				want = 1
			}
			if math.Abs(dot-want) > 1e-12 {
				t.Fatalf("columns %d and %d: dot %v, want %v", c, d, dot, want)
			}
			if math.Abs(math.Abs(ref)-want) > 1e-8 {
				t.Fatalf("column %d against singular vector %d: |dot| %v, want %v", c, d, math.Abs(ref), want)
			}
		}
	}
	again, _ := DeriveBases(cfg, []Tensor{a})
	if !slices.Equal(again["w"].U, b.U) {
		t.Fatal("the same aggregate gave another basis")
	}
	low := Tensor{Name: "w", Shape: []int{m, n}, Data: spectral(u[:], v, []float64{3, 2, 0, 0, 0, 0}, m, n)}
	if bl, _ := DeriveBases(cfg, []Tensor{low}); bl["w"] == nil || bl["w"].K != 2 {
		t.Fatalf("a rank-2 aggregate gave a basis of %v columns, want 2", bl["w"])
	}
	if none, err := DeriveBases(Config{MinLowRank: 16, SharedPowerIters: iters}, []Tensor{a}); none != nil || err != nil {
		t.Fatalf("shared rank 0 gave %v, %v", none, err)
	}
	bad := Tensor{Name: "w", Shape: []int{m, n}, Data: slices.Clone(a.Data)}
	bad.Data[3] = math.NaN()
	if _, err := DeriveBases(cfg, []Tensor{bad}); !errors.Is(err, ErrNotFinite) {
		t.Fatalf("NaN aggregate: %v", err)
	}
}

// Without the power iteration (SharedPowerIters -1) the basis of an aggregate whose rank is
// below the sketch's width is the one the power iteration gives, to rounding (up to each
// column's sign), and the same bits every time; on a full-rank aggregate (a strong low-rank
// part and noise) both come close to its leading singular vectors, the power iteration
// closer.
func TestDeriveBasesWithoutThePowerIteration(t *testing.T) {
	rng := newRand(22)
	const m, n = 90, 60
	sigma := []float64{9, 8, 6, 5, 3, 2, 1.5, 1}
	u, v := orthonormalCols(rng, m, len(sigma)), orthonormalCols(rng, n, len(sigma))
	low := Tensor{Name: "w", Shape: []int{m, n}, Data: spectral(u, v, sigma, m, n)}
	noisy := Tensor{Name: "w", Shape: []int{m, n}, Data: slices.Clone(low.Data)}
	for i := range noisy.Data {
		noisy.Data[i] += 0.02 * rng.NormFloat64()
	}
	for _, k := range []int{4, 6} {
		with, without := Config{SharedRank: k, MinLowRank: 16}, Config{SharedRank: k, MinLowRank: 16, SharedPowerIters: -1}
		bw, _ := DeriveBases(with, []Tensor{low})
		bo, _ := DeriveBases(without, []Tensor{low})
		again, _ := DeriveBases(without, []Tensor{low})
		if bw["w"] == nil || bo["w"] == nil || bo["w"].K != k || !slices.Equal(bo["w"].U, again["w"].U) {
			t.Fatalf("rank %d: bases %v and %v, or not the same bits again", k, bw["w"], bo["w"])
		}
		for c := 0; c < k; c++ {
			var dot float64
			for i := 0; i < m; i++ {
				dot += bw["w"].U[i*k+c] * bo["w"].U[i*k+c]
			}
			if math.Abs(math.Abs(dot)-1) > 1e-9 {
				t.Fatalf("rank %d, column %d: |dot| %v between the two bases, want 1", k, c, math.Abs(dot))
			}
		}
		// On the noisy aggregate: the energy of the leading k singular vectors each basis
		// holds, ‖Uᵀu_top‖²/k, near 1 for both.
		captured := func(cfg Config) float64 {
			bs, _ := DeriveBases(cfg, []Tensor{noisy})
			b := bs["w"]
			var e float64
			for c := 0; c < b.K; c++ {
				for d := 0; d < k; d++ {
					var dot float64
					for i := 0; i < m; i++ {
						dot += b.U[i*b.K+c] * u[i*len(sigma)+d]
					}
					e += dot * dot
				}
			}
			return e / float64(k)
		}
		cw, co := captured(with), captured(without)
		if !(cw > 0.99) || !(co > 0.97) || !(cw >= co-1e-9) {
			t.Fatalf("rank %d on the noisy aggregate: captured %v with the power iteration, %v without", k, cw, co)
		}
	}
	for _, bad := range []int{-2, 2} {
		cfg := Config{SharedRank: 4, SharedPowerIters: bad}
		if err := cfg.Validate(); !errors.Is(err, ErrConfig) {
			t.Fatalf("shared power iterations %d: %v", bad, err)
		}
	}
}

// sharedSetup is an encoder with shared bases derived from an aggregate, and the inputs of a
// few rounds.
func sharedSetup(t *testing.T, cfg Config) (*Encoder, Bases, [][]Tensor) {
	t.Helper()
	rng := newRand(33)
	agg := []Tensor{rankK(rng, "w", 48, 32, 6), randTensor(rng, "b", 1, 32), rankK(rng, "v", 40, 40, 3), rankK(rng, "wide", 16, 40, 2)}
	bases, err := DeriveBases(cfg, agg)
	if err != nil {
		t.Fatal(err)
	}
	var rounds [][]Tensor
	for r := 0; r < 4; r++ {
		in := clone(agg)
		for i := range in {
			noise := randTensor(rng, "", 0.3, len(in[i].Data)).Data
			for j := range in[i].Data {
				in[i].Data[j] = 0.5*in[i].Data[j] + noise[j]
			}
		}
		rounds = append(rounds, in)
	}
	return mustEncoder(t, cfg), bases, rounds
}

// With shared bases, every matrix with a basis sends coordinates on it besides its private
// terms; what a receiver decodes with the same bases plus the new residual is the input, to
// the bit (the residual is the input minus the reconstruction); the byte budget holds every
// round; a receiver without the bases cannot decode it.
func TestSharedEncodeSentPlusResidualIsInput(t *testing.T) {
	cfg := Config{SharedRank: 8, MinLowRank: 16, RankMax: 8, FactorBits: 2, ByteBudget: 900, BlockSize: 16, Seed: 5}
	e, bases, rounds := sharedSetup(t, cfg)
	if bases["w"] == nil || bases["v"] == nil || bases["wide"] != nil {
		t.Fatalf("bases %v", bases)
	}
	for r, in := range rounds {
		before := e.State()
		m, err := e.EncodeRoundShared(uint64(r), in, bases)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.PayloadBytes(); got > cfg.ByteBudget {
			t.Fatalf("round %d: %d payload bytes over the budget %d", r, got, cfg.ByteBudget)
		}
		sent := map[string]int{}
		for _, s := range e.Stats() {
			sent[s.Name] = s.SharedRank
		}
		if sent["w"] == 0 || sent["v"] == 0 || sent["wide"] != 0 || sent["b"] != 0 {
			t.Fatalf("round %d: shared ranks %v", r, sent)
		}
		data, _ := m.Bytes()
		wire, err := DecodeShard(data, DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := wire.Decode(); !errors.Is(err, ErrMalformed) {
			t.Fatalf("round %d: decoded without the bases: %v", r, err)
		}
		bound, err := wire.WithBases(bases)
		if err != nil {
			t.Fatal(err)
		}
		got := mustDecode(t, bound)
		residuals := func(st EncoderState) map[string][]float64 {
			out := map[string][]float64{}
			for _, ts := range st.Tensors {
				out[ts.Name] = ts.Residual
			}
			return out
		}
		prev, after := residuals(before), residuals(e.State())
		for i, x := range in {
			res := after[x.Name]
			for j, v := range x.Data {
				want := v
				if p := prev[x.Name]; p != nil {
					want = float64(p[j]) + v
				}
				if d := want - got[i].Data[j]; d != res[j] {
					t.Fatalf("round %d: %s[%d]: input %v minus decoded %v is %v, residual %v", r, x.Name, j, want, got[i].Data[j], d, res[j])
				}
			}
		}
		if _, err := wire.WithBases(Bases{"w": bases["w"]}); !errors.Is(err, ErrMalformed) {
			t.Fatalf("round %d: bound without v's basis: %v", r, err)
		}
		short := *bases["v"]
		short.Rows--
		short.U = short.U[:short.Rows*short.K]
		if _, err := wire.WithBases(Bases{"w": bases["w"], "v": &short}); !errors.Is(err, ErrMalformed) {
			t.Fatalf("round %d: bound to a basis of other rows: %v", r, err)
		}
	}
}

// The coordinates are Uᵀ·x against a naive reference: without quantisation, a matrix that
// lies in the span of its basis is sent whole by its coordinates (what is left for the
// private terms is rounding), and the decoded values are U·(Uᵀ·x) computed naively.
func TestSharedCoordinatesAgainstNaiveProjection(t *testing.T) {
	rng := newRand(44)
	const m, n, k = 30, 20, 5
	u := orthonormalCols(rng, m, k)
	b := &Basis{Rows: m, K: k, U: u}
	x := Tensor{Name: "w", Shape: []int{m, n}, Data: make([]float64, m*n)}
	coef := randTensor(rng, "", 1, k, n).Data
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			for c := 0; c < k; c++ {
				x.Data[i*n+j] += u[i*k+c] * coef[c*n+j]
			}
		}
	}
	e := mustEncoder(t, Config{SharedRank: k, MinLowRank: 16, RankMax: 8, NoQuant: true})
	msg, err := e.EncodeRoundShared(0, []Tensor{x}, Bases{"w": b})
	if err != nil {
		t.Fatal(err)
	}
	got := mustDecode(t, msg)[0].Data
	if e.Stats()[0].SharedRank != k {
		t.Fatalf("shared rank %d, want %d", e.Stats()[0].SharedRank, k)
	}
	if re := relErr(got, x.Data); re > 1e-9 {
		t.Fatalf("decoded differs from the input by %v", re)
	}
	if st := e.Stats()[0]; st.Captured < 1-1e-12 {
		t.Fatalf("captured %v of a matrix in the basis' span", st.Captured)
	}
}

// A message with shared coordinates survives the wire and sharding: its bytes decode to
// themselves, its shards (rows split, the coordinates whole in each) join back to the same
// bytes and decode with the bases to the same values; malformed shared pieces are refused.
func TestSharedWireAndShards(t *testing.T) {
	cfg := Config{SharedRank: 8, MinLowRank: 16, RankMax: 8, ByteBudget: 5000, BlockSize: 8, Seed: 2}
	e, bases, rounds := sharedSetup(t, cfg)
	big := rounds[0]
	big[0] = rankK(newRand(9), "w", 48, 32, 6)
	m, err := e.EncodeRoundShared(0, big, bases)
	if err != nil {
		t.Fatal(err)
	}
	whole := mustBytes(t, m)
	shards, err := m.ShardsOf(MinShardBytes)
	if err != nil {
		t.Fatal(err)
	}
	var parts []*Message
	for _, s := range shards {
		p, err := DecodeShard(s.Data, DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		if err := CheckShard(s.Data, map[string][]int{"w": {48, 32}, "b": {32}, "v": {40, 40}, "wide": {16, 40}}, math.Inf(1), DefaultLimits); err != nil {
			t.Fatal(err)
		}
		parts = append(parts, p)
	}
	joined, err := Join(parts)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mustBytes(t, joined), whole) {
		t.Fatal("joined shards encode differently")
	}
	a, _ := m.WithBases(bases)
	j, _ := joined.WithBases(bases)
	if !sameBits(mustDecode(t, a), mustDecode(t, j)) {
		t.Fatal("joined shards decode differently")
	}
	w := wireOf(m)
	var li int
	for i, p := range w.Pieces {
		if p.Name == "v" {
			li = i
		}
	}
	lp := w.Pieces[li]
	lp.SCodes, lp.SScales = bytes.Clone(lp.SCodes), bytes.Clone(lp.SScales)
	for name, edit := range map[string]func(p *piece){
		"shared rank over the columns": func(p *piece) { p.SRank = 41 },
		"negative shared rank":         func(p *piece) { p.SRank = -1 },
		"short coordinates":            func(p *piece) { p.SCodes = p.SCodes[1:] },
		"coordinates without a rank":   func(p *piece) { p.SRank = 0 },
		"rank and shared rank over the limit": func(p *piece) {
			p.SRank = DefaultLimits.MaxRank
		},
	} {
		ww := w
		ww.Pieces = slices.Clone(w.Pieces)
		p := lp
		edit(&p)
		ww.Pieces[li] = p
		if _, err := DecodeShard(encodeWire(t, ww), DefaultLimits); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: %v", name, err)
		}
	}
	ww := w
	ww.Pieces = slices.Clone(w.Pieces)
	for i, p := range ww.Pieces {
		if p.Rank == 0 { // the dense bias with coordinates
			p.SRank, p.SCodes, p.SScales = 1, lp.SCodes[:4], lp.SScales[:2]
			ww.Pieces[i] = p
		}
	}
	if _, err := DecodeShard(encodeWire(t, ww), DefaultLimits); !errors.Is(err, ErrMalformed) {
		t.Errorf("dense piece with coordinates: %v", err)
	}
}

// The content check, which has no basis, never passes a message whose decoded norm (with
// the bases) is over the bound, and its quick verdict is the value-by-value one.
func TestSharedCheckBoundsTheDecodedNorm(t *testing.T) {
	cfg := Config{SharedRank: 8, MinLowRank: 16, RankMax: 8, FactorBits: 2, ByteBudget: 900, BlockSize: 16, Seed: 5}
	e, bases, rounds := sharedSetup(t, cfg)
	shapes := map[string][]int{"w": {48, 32}, "b": {32}, "v": {40, 40}, "wide": {16, 40}}
	for r, in := range rounds {
		m, err := e.EncodeRoundShared(uint64(r), in, bases)
		if err != nil {
			t.Fatal(err)
		}
		var ss float64
		for _, tt := range mustDecode(t, m) {
			ss += sumSquares(tt.Data)
		}
		exact := math.Sqrt(ss)
		wire, err := DecodeShard(mustBytes(t, m), DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		if err := wire.Check(shapes, exact*(1-1e-9)); !errors.Is(err, ErrNormTooLarge) {
			t.Fatalf("round %d: a bound under the decoded norm %v passed: %v", r, exact, err)
		}
		bound, err := wire.valuesSumSquares()
		if err != nil {
			t.Fatal(err)
		}
		for _, maxNorm := range probeNorms(math.Sqrt(bound)) {
			verdictsAgree(t, wire, shapes, maxNorm)
		}
	}
}

// What the coordinates leave of the budget, once the bases are used up, goes to more
// private terms: the payload then fills the budget to within one private term, never over
// it; a piece's private and shared ranks together stay within RankMax.
func TestSharedSpillOverFillsTheBudget(t *testing.T) {
	for _, tc := range []struct{ budget, rankMax int }{{1500, 64}, {1500, 5}} {
		cfg := Config{SharedRank: 2, MinLowRank: 16, RankMax: tc.rankMax, FactorBits: 2, ByteBudget: tc.budget, BlockSize: 16, Seed: 5}
		e, bases, rounds := sharedSetup(t, cfg)
		for r, in := range rounds {
			m, err := e.EncodeRoundShared(uint64(r), in, bases)
			if err != nil {
				t.Fatal(err)
			}
			got := m.PayloadBytes()
			step := 0 // the largest private term's bytes
			for _, p := range m.pieces {
				if p.Rank+p.SRank > tc.rankMax {
					t.Fatalf("rank max %d: %s has rank %d and shared rank %d", tc.rankMax, p.Name, p.Rank, p.SRank)
				}
				if p.Rank > 0 {
					pc, ps := colsBytes(p.Shape[0], 1, 2, 16)
					qc, qs := colsBytes(p.Shape[1], 1, 2, 16)
					step = max(step, pc+ps+qc+qs)
				}
			}
			if got > tc.budget || tc.rankMax == 64 && got < tc.budget-step {
				t.Fatalf("rank max %d, round %d: %d payload bytes for a budget of %d (a private term is %d)", tc.rankMax, r, got, tc.budget, step)
			}
		}
	}
}

// A network without shared bases (Limits.NoShared) refuses a message carrying shared
// coordinates at decoding, shard by shard, so that none passes validation to be left out
// at every close; other limits take them.
func TestNoSharedRefusesSharedCoordinates(t *testing.T) {
	cfg := Config{SharedRank: 8, MinLowRank: 16, RankMax: 8, ByteBudget: 5000, BlockSize: 8, Seed: 2}
	e, bases, rounds := sharedSetup(t, cfg)
	m, err := e.EncodeRoundShared(0, rounds[0], bases)
	if err != nil {
		t.Fatal(err)
	}
	shards, err := m.ShardsOf(MinShardBytes)
	if err != nil {
		t.Fatal(err)
	}
	lim, refused := DefaultLimits, 0
	lim.NoShared = true
	for _, s := range shards {
		if _, err := DecodeShard(s.Data, DefaultLimits); err != nil {
			t.Fatalf("a shard of shared coordinates under the default limits: %v", err)
		}
		if _, err := DecodeShard(s.Data, lim); errors.Is(err, ErrMalformed) {
			refused++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if refused == 0 {
		t.Fatalf("none of %d shards of a message with shared coordinates refused with NoShared", len(shards))
	}
}
