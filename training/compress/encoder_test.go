package compress

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	var c Config
	if err := c.Validate(); err != nil || c.RankMax != DefaultRankMax || c.MaxShardBytes != DefaultMaxShardBytes {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	bad := []Config{
		{RankMin: 4, RankMax: 2},
		{RankMin: -1},
		{RankMax: MaxRank + 1},
		{EnergyTarget: 1.5},
		{EnergyTarget: -0.1},
		{EnergyTarget: math.NaN()},
		{PowerIters: 17},
		{BlockSize: 7},
		{BlockSize: 5000},
		{MaxShardBytes: HardMaxShardBytes + 1},
		{MaxShardBytes: 100},
		{DenseBits: 6},
		{MinLowRank: 2},
		{FeedbackDecay: -0.5},
		{FeedbackDecay: 1.01},
		{FeedbackDecay: math.NaN()},
		{ByteBudget: -1},
	}
	for i, c := range bad {
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("case %d %+v: got %v", i, c, err)
		}
	}
}

// Full rank without quantisation reproduces its input: dense tensors bit for bit, low-rank
// ones to float64 rounding (P·Qᵀ = P·Pᵀ·M with P square orthogonal).
func TestFullRankNoQuantExact(t *testing.T) {
	rng := newRand(3)
	ts := []Tensor{randTensor(rng, "w", 1, 24, 16), randTensor(rng, "b", 1, 10), randTensor(rng, "small", 1, 3, 3)}
	e := mustEncoder(t, Config{RankMin: 16, RankMax: 16, MinLowRank: 64, NoQuant: true})
	got := mustDecode(t, mustEncode(t, e, ts))
	for i := range ts {
		if got[i].Name != ts[i].Name || !slices.Equal(got[i].Shape, ts[i].Shape) {
			t.Fatalf("tensor %d: got %s %v", i, got[i].Name, got[i].Shape)
		}
	}
	if r := relErr(got[0].Data, ts[0].Data); r > 1e-13 {
		t.Fatalf("full-rank reconstruction relative error %g", r)
	}
	for _, i := range []int{1, 2} {
		for j := range ts[i].Data {
			if math.Float64bits(got[i].Data[j]) != math.Float64bits(ts[i].Data[j]) {
				t.Fatalf("%s[%d] = %v, want %v", ts[i].Name, j, got[i].Data[j], ts[i].Data[j])
			}
		}
	}
	if st := e.Stats()[0]; !st.LowRank || st.Rank != 16 || st.Captured < 1-1e-20 {
		t.Fatalf("stats %+v", st)
	}
}

// A truly rank-k matrix is recovered at rank r >= k: to float rounding without quantisation,
// to int4 quantisation error with it.
func TestLowRankRecoversRankK(t *testing.T) {
	rng := newRand(4)
	x := rankK(rng, "w", 64, 48, 3)
	for _, tc := range []struct {
		noQuant bool
		bound   float64
	}{{true, 1e-12}, {false, 0.2}} {
		// int4 in 64-value blocks: about 10% rms error per factor (half a step of max/7),
		// about 17% for the product of the two factors.
		e := mustEncoder(t, Config{RankMin: 4, RankMax: 4, PowerIters: 2, MinLowRank: 64, NoQuant: tc.noQuant})
		got := mustDecode(t, mustEncode(t, e, []Tensor{x}))
		if r := relErr(got[0].Data, x.Data); r > tc.bound {
			t.Fatalf("noQuant=%v: relative error %g > %g", tc.noQuant, r, tc.bound)
		}
	}
}

// The residual is exactly (delta + old residual) minus what the receiver decodes.
func TestResidualMatchesDecode(t *testing.T) {
	rng := newRand(5)
	e := mustEncoder(t, Config{RankMax: 4, MinLowRank: 64})
	prev := map[string][]float64{"w": make([]float64, 40*30), "b": make([]float64, 30)}
	for round := 0; round < 4; round++ {
		ts := []Tensor{randTensor(rng, "w", 1, 40, 30), randTensor(rng, "b", 1, 30)}
		got := mustDecode(t, mustEncode(t, e, ts))
		for i, tt := range ts {
			res := e.state[tt.Name].residual
			for j := range tt.Data {
				want := (prev[tt.Name][j] + tt.Data[j]) - got[i].Data[j]
				if math.Float64bits(res[j]) != math.Float64bits(want) {
					t.Fatalf("round %d %s[%d]: residual %v, want %v", round, tt.Name, j, res[j], want)
				}
			}
			prev[tt.Name] = append([]float64(nil), res...)
		}
	}
}

// Error feedback: the sum of what was sent converges to the sum of the inputs. The inputs
// have a persistent direction plus noise, like pseudo-gradients; the gap (= the residual)
// stays bounded while the total grows linearly, so the relative gap falls like 1/rounds.
func TestErrorFeedbackConverges(t *testing.T) {
	rng := newRand(6)
	base := []Tensor{randTensor(rng, "w", 1, 48, 32), randTensor(rng, "b", 1, 32)}
	e := mustEncoder(t, Config{RankMin: 8, RankMax: 8, MinLowRank: 64})
	sumIn := clone(base)
	sumOut := clone(base)
	for i := range sumIn {
		clear(sumIn[i].Data)
		clear(sumOut[i].Data)
	}
	gap := func() float64 {
		var d, tot []float64
		for i := range sumIn {
			for j := range sumIn[i].Data {
				d = append(d, sumIn[i].Data[j]-sumOut[i].Data[j])
				tot = append(tot, sumIn[i].Data[j])
			}
		}
		return norm(d) / norm(tot)
	}
	var gaps []float64
	for round := 1; round <= 64; round++ {
		ts := clone(base)
		for i := range ts {
			for j := range ts[i].Data {
				ts[i].Data[j] += 0.5 * rng.NormFloat64()
				sumIn[i].Data[j] += ts[i].Data[j]
			}
		}
		got := mustDecode(t, mustEncode(t, e, ts))
		for i := range got {
			for j := range got[i].Data {
				sumOut[i].Data[j] += got[i].Data[j]
			}
		}
		if round == 4 || round == 16 || round == 64 {
			gaps = append(gaps, gap())
		}
	}
	t.Logf("relative gap after 4, 16, 64 rounds: %.4f %.4f %.4f", gaps[0], gaps[1], gaps[2])
	if !(gaps[1] < gaps[0]/2 && gaps[2] < gaps[1]/2 && gaps[2] < 0.06) {
		t.Fatalf("relative gap does not shrink like 1/rounds: %v", gaps)
	}
}

func TestEncodeDeterministic(t *testing.T) {
	run := func() [][]byte {
		rng := newRand(7)
		e := mustEncoder(t, Config{RankMin: 1, RankMax: 8, EnergyTarget: 0.8, MinLowRank: 64, Seed: 42})
		var out [][]byte
		for round := 0; round < 5; round++ {
			ts := []Tensor{randTensor(rng, "w", 1, 64, 40), randTensor(rng, "b", 1, 40)}
			out = append(out, mustBytes(t, mustEncode(t, e, ts)))
		}
		return out
	}
	a, b := run(), run()
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			t.Fatalf("round %d: encodings differ", i)
		}
	}
}

// The rank grows while the captured energy is below target and shrinks when well above.
func TestAdaptiveRank(t *testing.T) {
	rng := newRand(8)
	e := mustEncoder(t, Config{RankMin: 1, RankMax: 12, EnergyTarget: 0.9, PowerIters: 2, MinLowRank: 64, NoQuant: true})
	for round := 0; round < 10; round++ {
		mustEncode(t, e, []Tensor{rankK(rng, "w", 60, 50, 6)})
	}
	grown := e.Stats()[0].NextRank
	if grown < 6 {
		t.Fatalf("rank %d after rank-6 inputs at target 0.9", grown)
	}
	clear(e.state["w"].residual)
	for round := 0; round < 2*grown; round++ {
		mustEncode(t, e, []Tensor{rankK(rng, "w", 60, 50, 1)})
		clear(e.state["w"].residual)
	}
	if r := e.Stats()[0].NextRank; r >= grown || r > 2 {
		t.Fatalf("rank %d after rank-1 inputs (was %d)", r, grown)
	}
}

func TestEncodeRejectsBadInput(t *testing.T) {
	rng := newRand(9)
	good := randTensor(rng, "w", 1, 4, 4)
	e := mustEncoder(t, Config{MinLowRank: 8})
	mustEncode(t, e, []Tensor{good})
	before := append([]float64(nil), e.state["w"].residual...)
	nan := clone([]Tensor{good})[0]
	nan.Data[3] = math.NaN()
	huge := clone([]Tensor{good})[0]
	huge.Data[0] = 1e35
	cases := map[string][]Tensor{
		"empty":         nil,
		"no name":       {{Name: "", Shape: []int{1}, Data: []float64{1}}},
		"duplicate":     {good, good},
		"shape/data":    {{Name: "x", Shape: []int{2, 2}, Data: []float64{1}}},
		"zero dim":      {{Name: "x", Shape: []int{0}, Data: nil}},
		"shape changed": {{Name: "w", Shape: []int{16}, Data: good.Data}},
		"nan":           {nan},
		"huge":          {huge},
	}
	for name, ts := range cases {
		if _, err := e.Encode(ts); !errors.Is(err, ErrInput) {
			t.Errorf("%s: got %v", name, err)
		}
	}
	for i, v := range e.state["w"].residual {
		if math.Float64bits(v) != math.Float64bits(before[i]) {
			t.Fatal("failed Encode changed the residual")
		}
	}
}

// An input of lower rank than r: the surplus columns of P are sent as zero (not as arbitrary
// basis vectors that would waste int4 range), and the warm start gets fresh random columns.
func TestRankDeficientInput(t *testing.T) {
	rng := newRand(17)
	x := rankK(rng, "w", 64, 40, 2)
	zero := Tensor{Name: "z", Shape: []int{32, 32}, Data: make([]float64, 32*32)}
	e := mustEncoder(t, Config{RankMin: 6, RankMax: 6, MinLowRank: 64})
	got := mustDecode(t, mustEncode(t, e, []Tensor{x, zero}))
	if r := relErr(got[0].Data, x.Data); r > 0.2 {
		t.Fatalf("rank-2 input at rank 6: relative error %g", r)
	}
	for _, v := range got[1].Data {
		if v != 0 {
			t.Fatal("zero tensor decoded to non-zero")
		}
	}
	lr := e.state["w"].lr
	if len(lr.dead) != 4 {
		t.Fatalf("%d dead columns, want 4", len(lr.dead))
	}
	for _, k := range lr.dead {
		var s float64
		for j := 0; j < lr.cols; j++ {
			s += math.Abs(lr.q[j*lr.rank+k])
		}
		if s == 0 {
			t.Fatalf("warm-start column %d left at zero", k)
		}
	}
}

// Residual is a copy of what the messages left undelivered: the input less the decoded
// message in the first round; changing the copy changes nothing; an unseen tensor has none.
func TestResidualIsUndeliveredCopy(t *testing.T) {
	rng := newRand(31)
	ts := []Tensor{randTensor(rng, "w", 1, 24, 20), randTensor(rng, "b", 1, 20)}
	e := mustEncoder(t, Config{RankMax: 2, MinLowRank: 64, FactorBits: 2})
	m := mustEncode(t, e, ts)
	dec, err := m.Decode()
	if err != nil {
		t.Fatal(err)
	}
	for i, tt := range ts {
		r := e.Residual(tt.Name)
		if len(r) != len(tt.Data) {
			t.Fatalf("%s: %d residual values", tt.Name, len(r))
		}
		for j, v := range tt.Data {
			if want := v - dec[i].Data[j]; math.Float64bits(r[j]) != math.Float64bits(want) {
				t.Fatalf("%s[%d]: residual %v, input less message %v", tt.Name, j, r[j], want)
			}
		}
		r[0] += 1
		if e.Residual(tt.Name)[0] == r[0] {
			t.Fatalf("%s: the residual is not a copy", tt.Name)
		}
	}
	if e.Residual("none") != nil {
		t.Fatal("a residual for a tensor never seen")
	}
}
