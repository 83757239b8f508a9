package bench

import (
	"context"
	"math"
	"os"
	"testing"

	"github.com/lowband/lowband/training/compress"
)

func TestRunTrainTiny(t *testing.T) {
	if _, err := os.Stat(DefaultCorpus()); err != nil {
		t.Skipf("default corpus not found: %v", err)
	}
	o := DefaultTrainOptions("charlm")
	o.Workers, o.Rounds, o.H, o.Batch, o.EvalSamples = 3, 3, 2, 4, 64
	o.Context, o.Embed, o.Hidden = 4, 4, []int{16, 16}
	o.Compress.MinLowRank = 64
	o.Seeds = 2
	res, err := RunTrain(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Modes) != len(TrainModes) {
		t.Fatalf("%d modes", len(res.Modes))
	}
	for _, m := range res.Modes {
		if !(m.ValLoss > 0) || !(m.TestLoss > 0) || !m.Agree || !(m.BytesPerRound > 0) {
			t.Errorf("%s: %+v", m.Name, m)
		}
		if len(m.TestLosses) != 2 || m.TestLosses[0] == m.TestLosses[1] || !(m.TestLossSD > 0) {
			t.Errorf("%s: two seeds gave test losses %v, sd %v", m.Name, m.TestLosses, m.TestLossSD)
		}
		if m.CompressShare < 0 || m.AggregateShare < 0 || m.CompressShare+m.AggregateShare > 1 {
			t.Errorf("%s: shares %v + %v", m.Name, m.CompressShare, m.AggregateShare)
		}
		if (m.Name == ModeAllReduce || m.Name == ModeDiLoCo) && m.CompressShare != 0 {
			t.Errorf("%s: dense mode with compress share %v", m.Name, m.CompressShare)
		}
		if (m.Name == ModeCompress || m.Name == ModeCompressDelay) && !(m.CompressionRatio > 1) {
			t.Errorf("%s: compression ratio %v", m.Name, m.CompressionRatio)
		}
		checkCodecStats(t, m, o.Rounds)
	}
	if _, err := RunTrain(context.Background(), TrainOptions{Task: "imagenet"}, nil); err == nil {
		t.Error("unknown task accepted")
	}
}

// With a target ratio, the compressed modes' messages are at least that many times smaller
// than dense fp32, and the nodes still agree.
func TestRunTrainTargetRatio(t *testing.T) {
	if _, err := os.Stat(DefaultCorpus()); err != nil {
		t.Skipf("default corpus not found: %v", err)
	}
	o := DefaultTrainOptions("charlm")
	o.Workers, o.Rounds, o.H, o.Batch, o.EvalSamples = 2, 3, 2, 4, 64
	o.Context, o.Embed, o.Hidden = 4, 4, []int{16, 16}
	o.Compress.MinLowRank, o.Compress.RankMax = 64, 16
	o.Modes = []string{ModeCompress, ModeCompressDelay}
	for _, ratio := range []float64{8, 12} {
		o.TargetRatio = ratio
		res, err := RunTrain(context.Background(), o, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res.Modes {
			if m.CompressionRatio < ratio || m.CompressionRatio > 2*ratio || !m.Agree {
				t.Errorf("target %v: %s achieved %.2fx (agree %v)", ratio, m.Name, m.CompressionRatio, m.Agree)
			}
		}
	}
}

// The pareto run gives the dense baselines and a row per target ratio and delay setting,
// each at least as small as its target, with gaps computed against the baselines.
func TestRunPareto(t *testing.T) {
	if _, err := os.Stat(DefaultCorpus()); err != nil {
		t.Skipf("default corpus not found: %v", err)
	}
	o := DefaultTrainOptions("charlm")
	o.Workers, o.Rounds, o.H, o.Batch, o.EvalSamples, o.Seeds = 2, 2, 2, 4, 64, 2
	o.Context, o.Embed, o.Hidden = 4, 4, []int{16, 16}
	o.Compress.MinLowRank, o.Compress.RankMax = 64, 16
	res, err := RunPareto(context.Background(), o, []float64{10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2 || res.Seeds != 2 || !(res.AllReduce.LossMean > 0) || !(res.DiLoCo.LossSD > 0) {
		t.Fatalf("%+v", res)
	}
	for i, row := range res.Rows {
		if row.TargetRatio != 10 || row.Delay != (i%2 == 1) || row.AchievedRatio < row.TargetRatio {
			t.Errorf("row %d: %+v", i, row)
		}
		if d := row.LossMean/res.DiLoCo.LossMean - 1; d != row.GapVsDiLoCo {
			t.Errorf("row %d: gap vs diloco %v, want %v", i, row.GapVsDiLoCo, d)
		}
	}
	if _, err := RunPareto(context.Background(), o, []float64{0.5}, nil); err == nil {
		t.Error("target ratio below 1 accepted")
	}
}

// checkCodecStats: the compressed modes report every round's codec statistics, the dense
// modes none.
func checkCodecStats(t *testing.T, m ModeResult, rounds int) {
	t.Helper()
	if m.Name == ModeAllReduce || m.Name == ModeDiLoCo {
		if m.Codec != nil {
			t.Errorf("%s: codec statistics for a dense mode", m.Name)
		}
		return
	}
	if len(m.Codec) != rounds {
		t.Fatalf("%s: codec statistics for %d rounds, want %d", m.Name, len(m.Codec), rounds)
	}
	for _, cr := range m.Codec {
		lowRank := false
		for _, ts := range cr.Tensors {
			lowRank = lowRank || ts.Rank > 0
			if !(ts.Captured <= 1) || !(ts.Residual >= 0) {
				t.Errorf("%s round %d %s: captured %v, residual %v", m.Name, cr.Round, ts.Name, ts.Captured, ts.Residual)
			}
		}
		if !lowRank {
			t.Errorf("%s round %d: no low-rank tensor in %+v", m.Name, cr.Round, cr.Tensors)
		}
		if cr.FactorCodeBytes == 0 || cr.FactorScaleBytes == 0 || (cr.Codes2 != nil) != (cr.CodeEntropy > 0) || !(cr.CodeEntropy <= 2) {
			t.Errorf("%s round %d: payload %d, %d, %d bytes, codes %v, entropy %v", m.Name, cr.Round,
				cr.FactorCodeBytes, cr.FactorScaleBytes, cr.DenseBytes, cr.Codes2, cr.CodeEntropy)
		}
	}
}

// entropy is in bits per item: 2 for four equally frequent levels, 0 for one, 1.5 for
// the frequencies 1/2, 1/4, 1/4; nothing to count has none.
func TestEntropy(t *testing.T) {
	for _, c := range []struct {
		counts []int
		want   float64
	}{{[]int{5, 5, 5, 5}, 2}, {[]int{0, 7, 0, 0}, 0}, {[]int{2, 1, 0, 1}, 1.5}} {
		if h, ok := entropy(c.counts); !ok || math.Abs(h-c.want) > 1e-12 {
			t.Errorf("%v: %v, %v; want %v", c.counts, h, ok, c.want)
		}
	}
	if _, ok := entropy([]int{0, 0, 0, 0}); ok {
		t.Error("no counts: an entropy")
	}
	rs := []CodecRound{{Codes2: []int{1, 0, 0, 0}}, {}, {Codes2: []int{0, 1, 1, 1}}}
	if h := codeEntropy(rs); h != 2 {
		t.Errorf("pooled over the rounds: %v, want 2", h)
	}
}

// The top-k codec and the dense tensors held back (DenseEvery) run through the machines:
// every node agrees, the target ratio is met, the captured energy is a share, and with
// DenseEvery the codec statistics show tensors held back.
func TestRunTrainTopKAndDenseEvery(t *testing.T) {
	if _, err := os.Stat(DefaultCorpus()); err != nil {
		t.Skipf("default corpus not found: %v", err)
	}
	o := DefaultTrainOptions("charlm")
	o.Workers, o.Rounds, o.H, o.Batch, o.EvalSamples = 2, 3, 2, 4, 64
	o.Context, o.Embed, o.Hidden = 4, 4, []int{16, 16}
	o.Compress.MinLowRank, o.Compress.RankMax = 64, 16
	o.Modes, o.TargetRatio = []string{ModeCompressDelay}, 10
	for _, edit := range []func(*TrainOptions){
		func(o *TrainOptions) { o.Compress.Codec = compress.CodecTopK },
		func(o *TrainOptions) { o.Compress.DenseEvery = 3 },
	} {
		oo := o
		edit(&oo)
		res, err := RunTrain(context.Background(), oo, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := res.Modes[0]
		if m.CompressionRatio < 10 || !m.Agree || !(m.CapturedEnergy > 0 && m.CapturedEnergy <= 1) {
			t.Errorf("%+v: achieved %.2fx, agree %v, captured %v", oo.Compress, m.CompressionRatio, m.Agree, m.CapturedEnergy)
		}
		held := false
		for _, cr := range m.Codec {
			for _, ts := range cr.Tensors {
				held = held || ts.Held
			}
		}
		if held != (oo.Compress.DenseEvery == 3) {
			t.Errorf("%+v: tensors held back: %v", oo.Compress, held)
		}
	}
}

// With the matrices sent in turn (Compress.Fragments), both compressed modes run: every
// node agrees, the target ratio is met, the 2-bit codes' entropy is reported, and the
// codec statistics show matrices held back at rank 0 and others sent.
func TestRunTrainFragments(t *testing.T) {
	if _, err := os.Stat(DefaultCorpus()); err != nil {
		t.Skipf("default corpus not found: %v", err)
	}
	o := DefaultTrainOptions("charlm")
	o.Workers, o.Rounds, o.H, o.Batch, o.EvalSamples = 2, 3, 2, 4, 64
	o.Context, o.Embed, o.Hidden = 4, 4, []int{16, 16}
	o.Compress.MinLowRank, o.Compress.RankMax, o.Compress.Fragments, o.Compress.FactorBits = 64, 16, 2, 2
	o.Modes, o.TargetRatio = []string{ModeCompress, ModeCompressDelay}, 10
	res, err := RunTrain(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range res.Modes {
		if m.CompressionRatio < 10 || !m.Agree || !(m.CodeEntropy > 0 && m.CodeEntropy <= 2) {
			t.Errorf("%s: achieved %.2fx, agree %v, code entropy %v", m.Name, m.CompressionRatio, m.Agree, m.CodeEntropy)
		}
		checkCodecStats(t, m, o.Rounds)
		for _, cr := range m.Codec {
			held, sent := 0, 0
			for _, ts := range cr.Tensors {
				switch {
				case ts.Held && ts.Rank == 0:
					held++
				case ts.Rank > 0:
					sent++
				}
			}
			if held == 0 || sent == 0 {
				t.Errorf("%s round %d: %d matrices held, %d sent: %+v", m.Name, cr.Round, held, sent, cr.Tensors)
			}
		}
	}
}

// With shared bases the undelayed compressed mode keeps every node's θ the same bytes, stays
// within its byte budget and sends coordinates from the second round on; the pareto run
// then has undelayed rows only (the bases need delay 0).
func TestSharedRankRuns(t *testing.T) {
	if _, err := os.Stat(DefaultCorpus()); err != nil {
		t.Skipf("default corpus not found: %v", err)
	}
	o := DefaultTrainOptions("charlm")
	o.Workers, o.Rounds, o.H, o.Batch, o.EvalSamples = 3, 3, 2, 4, 64
	o.Context, o.Embed, o.Hidden = 4, 4, []int{16, 16}
	o.Compress.MinLowRank, o.Compress.RankMax, o.Compress.SharedRank, o.Compress.FactorBits = 64, 16, 8, 2
	o.CompressMomentum = 0
	res, err := RunPareto(context.Background(), o, []float64{10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || res.Rows[0].Delay || res.Rows[0].AchievedRatio < 10 {
		t.Fatalf("rows %+v", res.Rows)
	}
	o.Modes, o.TargetRatio = []string{ModeCompress}, 10
	tr, err := RunTrain(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := tr.Modes[0]
	shared := 0
	for _, r := range m.Codec {
		for _, ct := range r.Tensors {
			if r.Round == 0 && ct.SharedRank > 0 {
				t.Fatalf("round 0 sent coordinates on a basis (%s)", ct.Name)
			}
			shared += ct.SharedRank
		}
	}
	if !m.Agree || shared == 0 {
		t.Fatalf("agree %v, %d coordinates sent", m.Agree, shared)
	}
}

// With MergeStep the delayed mode's rounds close during the next round's work: it runs, its
// nodes agree, and it trains another way than without (the loss differs); a merge step
// outside [1, H-1] is refused.
func TestRunTrainMergeStep(t *testing.T) {
	if _, err := os.Stat(DefaultCorpus()); err != nil {
		t.Skipf("default corpus not found: %v", err)
	}
	o := DefaultTrainOptions("charlm")
	o.Workers, o.Rounds, o.H, o.Batch, o.EvalSamples = 3, 4, 3, 4, 64
	o.Context, o.Embed, o.Hidden = 4, 4, []int{16, 16}
	o.Compress.MinLowRank = 64
	o.Modes = []string{ModeCompressDelay}
	o.DelayStart, o.DelayMix, o.StartResidual = "eager", 0.5, 0.25
	loss := make([]float64, 2)
	for i, k := range []int{0, 1} {
		o.MergeStep = k
		res, err := RunTrain(context.Background(), o, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := res.Modes[0]
		if !m.Agree || !(m.TestLoss > 0) {
			t.Fatalf("merge step %d: %+v", k, m)
		}
		loss[i] = m.TestLoss
	}
	if loss[0] == loss[1] {
		t.Errorf("merge step 1 trained exactly as without: test loss %v", loss[0])
	}
	for _, k := range []int{-1, 3} {
		o.MergeStep = k
		if _, err := RunTrain(context.Background(), o, nil); err == nil {
			t.Errorf("merge step %d with H 3 accepted", k)
		}
	}
}
