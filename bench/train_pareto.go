package bench

import (
	"context"
	"fmt"
	"io"
)

// ParetoResult is the JSON object `lowband bench train --pareto ... --json` prints: test
// loss against bytes, for the compressed modes at several target ratios, beside the dense
// baselines of the same seeds.
type ParetoResult struct {
	Task      string      `json:"task"`
	Seeds     int         `json:"seeds"`
	Rounds    int         `json:"rounds"`
	AllReduce LossSummary `json:"allreduce"`
	DiLoCo    LossSummary `json:"diloco"`
	Rows      []ParetoRow `json:"rows"`
}

// LossSummary is a dense baseline's held-out test loss over the seeds.
type LossSummary struct {
	LossMean     float64  `json:"loss_mean"`
	LossSD       float64  `json:"loss_sd"`
	AccuracyMean *float64 `json:"accuracy_mean,omitempty"`
}

// ParetoRow is one target ratio, with or without the one-step delay. Gaps are relative:
// 0.05 means a test loss 5% above the baseline's.
type ParetoRow struct {
	TargetRatio    float64  `json:"target_ratio"`
	Delay          bool     `json:"delay"`
	AchievedRatio  float64  `json:"achieved_ratio"`
	BytesPerRound  float64  `json:"bytes_per_round"`
	LossMean       float64  `json:"loss_mean"`
	LossSD         float64  `json:"loss_sd"`
	AccuracyMean   *float64 `json:"accuracy_mean,omitempty"`
	GapVsDiLoCo    float64  `json:"gap_vs_diloco"`
	GapVsAllReduce float64  `json:"gap_vs_allreduce"`
	// CapturedEnergy is the share of the codec's input energy its messages carried
	// (ModeResult.CapturedEnergy); CompressShare the share of CPU time in the codec.
	CapturedEnergy float64 `json:"captured_energy"`
	CompressShare  float64 `json:"compress_share"`
}

// RunPareto runs, over opt.Seeds seeds, allreduce and dense diloco once each, then for each
// target ratio both compressed modes with a byte budget of that ratio
// (TrainOptions.TargetRatio). Ranks are allocated within [Compress.RankMin,
// Compress.RankMax]: raise RankMax for the low ratios. With shared bases
// (Compress.SharedRank), which need delay 0, only the undelayed mode runs. A progress line
// per run goes to logw.
func RunPareto(ctx context.Context, opt TrainOptions, ratios []float64, logw io.Writer) (*ParetoResult, error) {
	if len(ratios) == 0 {
		return nil, fmt.Errorf("bench train: --pareto needs at least one target ratio")
	}
	for _, r := range ratios {
		if !(r >= 1) {
			return nil, fmt.Errorf("bench train: target ratio %v is below 1", r)
		}
	}
	base := opt
	base.Modes, base.TargetRatio = []string{ModeAllReduce, ModeDiLoCo}, 0
	dense, err := RunTrain(ctx, base, logw)
	if err != nil {
		return nil, err
	}
	res := &ParetoResult{Task: dense.Task, Seeds: dense.Seeds, Rounds: dense.Rounds,
		AllReduce: summary(dense.Modes[0]), DiLoCo: summary(dense.Modes[1])}
	for _, r := range ratios {
		o := opt
		o.Modes, o.TargetRatio = []string{ModeCompress, ModeCompressDelay}, r
		if o.Compress.SharedRank > 0 {
			o.Modes = o.Modes[:1]
		}
		tr, err := RunTrain(ctx, o, logw)
		if err != nil {
			return nil, fmt.Errorf("target ratio %v: %w", r, err)
		}
		for _, m := range tr.Modes {
			res.Rows = append(res.Rows, ParetoRow{
				TargetRatio: r, Delay: m.Name == ModeCompressDelay,
				AchievedRatio: m.CompressionRatio, BytesPerRound: m.BytesPerRound,
				LossMean: m.TestLoss, LossSD: m.TestLossSD, AccuracyMean: m.TestAcc,
				GapVsDiLoCo:    m.TestLoss/res.DiLoCo.LossMean - 1,
				GapVsAllReduce: m.TestLoss/res.AllReduce.LossMean - 1,
				CapturedEnergy: m.CapturedEnergy, CompressShare: m.CompressShare,
			})
		}
	}
	return res, nil
}

func summary(m ModeResult) LossSummary {
	return LossSummary{LossMean: m.TestLoss, LossSD: m.TestLossSD, AccuracyMean: m.TestAcc}
}

// WriteTable prints r as a readable table.
func (r *ParetoResult) WriteTable(w io.Writer) error {
	acc := func(a *float64) string {
		if a == nil {
			return "-"
		}
		return fmt.Sprintf("%.4f", *a)
	}
	fmt.Fprintf(w, "task %s: %d seed(s), %d rounds; test loss mean ± sd\n", r.Task, r.Seeds, r.Rounds)
	fmt.Fprintf(w, "allreduce %.4f ± %.4f (accuracy %s); diloco %.4f ± %.4f (accuracy %s)\n",
		r.AllReduce.LossMean, r.AllReduce.LossSD, acc(r.AllReduce.AccuracyMean), r.DiLoCo.LossMean, r.DiLoCo.LossSD, acc(r.DiLoCo.AccuracyMean))
	fmt.Fprintf(w, "%8s %6s %9s %12s %17s %8s %10s %10s %8s %6s\n", "target", "delay", "achieved", "bytes/round", "test_loss", "accuracy", "vs_diloco", "vs_allred", "captured", "codec")
	for _, row := range r.Rows {
		loss := fmt.Sprintf("%.4f ± %.4f", row.LossMean, row.LossSD)
		if _, err := fmt.Fprintf(w, "%7.0fx %6v %8.1fx %12.0f %17s %8s %+9.1f%% %+9.1f%% %8.3f %5.1f%%\n", row.TargetRatio, row.Delay, row.AchievedRatio, row.BytesPerRound,
			loss, acc(row.AccuracyMean), 100*row.GapVsDiLoCo, 100*row.GapVsAllReduce, row.CapturedEnergy, 100*row.CompressShare); err != nil {
			return err
		}
	}
	return nil
}
