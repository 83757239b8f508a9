package bench

import (
	"fmt"
	"io"
	"math"
)

// TrainResult is the JSON object `lowband bench train --json` prints.
type TrainResult struct {
	Task        string       `json:"task"`
	Workers     int          `json:"workers"`
	Rounds      int          `json:"rounds"`
	H           int          `json:"h"`
	Batch       int          `json:"batch"`
	Seeds       int          `json:"seeds"`
	Params      int          `json:"params"`
	ValSamples  int          `json:"val_samples"`
	TestSamples int          `json:"test_samples"`
	Modes       []ModeResult `json:"modes"`
}

// ModeResult is one mode's measurements: losses and accuracy are means over the seeds with
// their sample standard deviations (0 for one seed); the other figures are means.
type ModeResult struct {
	Name string `json:"name"`
	// ValLoss is the loss on the validation split, samples taken out of the training data
	// that no worker trains on: choose settings by it.
	ValLoss   float64 `json:"val_loss"`
	ValLossSD float64 `json:"val_loss_sd"`
	// TestLoss is the loss on held-out test samples: report it.
	TestLoss   float64  `json:"test_loss"`
	TestLossSD float64  `json:"test_loss_sd"`
	TestAcc    *float64 `json:"test_accuracy,omitempty"`
	TestAccSD  *float64 `json:"test_accuracy_sd,omitempty"`
	// TestLosses is every seed's test loss, in seed order.
	TestLosses []float64 `json:"test_losses"`
	// BytesPerRound is what one worker sends per round (allreduce: a dense fp32 gradient
	// every inner step).
	BytesPerRound float64 `json:"bytes_per_round"`
	// BytesTotal is what all workers send over the whole run.
	BytesTotal float64 `json:"bytes_total"`
	// CompressionRatio is dense fp32 pseudo-gradient bytes over BytesPerRound.
	CompressionRatio float64 `json:"compression_ratio"`
	// CompressShare is the share of the mode's CPU time spent compressing and decoding, all
	// workers together: encoding pseudo-gradients and cutting them into shards; parsing and
	// joining received shards and reconstructing every contribution's dense parameter vector
	// (including its own). 0 for the dense modes.
	CompressShare float64 `json:"compress_share"`
	// AggregateShare is the share of the mode's CPU time spent combining the contributions
	// and in the outer step (dense diloco: also forming the pseudo-gradients).
	AggregateShare float64 `json:"aggregate_share"`
	TokensPerS     float64 `json:"tokens_per_s"`
	Seconds        float64 `json:"seconds"`
	// Agree is true when, in every seed's run, every simulated node ended with byte-identical
	// parameters.
	Agree bool `json:"nodes_agree"`
	// CapturedEnergy is, for the compressed modes, the share of the codec's input energy
	// (pseudo-gradient plus error feedback, whole model) its messages carried, averaged
	// over the rounds and the seeds (worker 0).
	CapturedEnergy float64 `json:"captured_energy,omitempty"`
	// CodeEntropy is, with 2-bit factors, the empirical entropy of worker 0's factor codes
	// over all the rounds in bits per code (of 2), averaged over the seeds.
	CodeEntropy float64 `json:"code_entropy,omitempty"`
	// Codec is, for the compressed modes, worker 0's codec statistics per round (first
	// seed): each tensor's rank, captured energy and residual norm.
	Codec []CodecRound `json:"codec,omitempty"`
}

// meanOf summarises one mode's runs, one per seed (at least one).
func meanOf(runs []*ModeResult) ModeResult {
	out := ModeResult{Name: runs[0].Name, Agree: true, Codec: runs[0].Codec}
	pick := func(f func(*ModeResult) float64) []float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = f(r)
		}
		return v
	}
	out.ValLoss, out.ValLossSD = meanSD(pick(func(r *ModeResult) float64 { return r.ValLoss }))
	out.TestLosses = pick(func(r *ModeResult) float64 { return r.TestLoss })
	out.TestLoss, out.TestLossSD = meanSD(out.TestLosses)
	if runs[0].TestAcc != nil {
		m, sd := meanSD(pick(func(r *ModeResult) float64 { return *r.TestAcc }))
		out.TestAcc, out.TestAccSD = &m, &sd
	}
	for _, f := range []struct {
		dst *float64
		get func(*ModeResult) float64
	}{
		{&out.BytesPerRound, func(r *ModeResult) float64 { return r.BytesPerRound }},
		{&out.BytesTotal, func(r *ModeResult) float64 { return r.BytesTotal }},
		{&out.CompressionRatio, func(r *ModeResult) float64 { return r.CompressionRatio }},
		{&out.CompressShare, func(r *ModeResult) float64 { return r.CompressShare }},
		{&out.AggregateShare, func(r *ModeResult) float64 { return r.AggregateShare }},
		{&out.TokensPerS, func(r *ModeResult) float64 { return r.TokensPerS }},
		{&out.Seconds, func(r *ModeResult) float64 { return r.Seconds }},
		{&out.CapturedEnergy, func(r *ModeResult) float64 { return r.CapturedEnergy }},
		{&out.CodeEntropy, func(r *ModeResult) float64 { return r.CodeEntropy }},
	} {
		*f.dst, _ = meanSD(pick(f.get))
	}
	for _, r := range runs {
		out.Agree = out.Agree && r.Agree
	}
	return out
}

// meanSD returns the mean and the sample standard deviation (0 for fewer than two values).
func meanSD(v []float64) (mean, sd float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	if len(v) < 2 {
		return mean, 0
	}
	ss := 0.0
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(v)-1))
}

// WriteTable prints r as a readable table.
func (r *TrainResult) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "task %s: %d workers, %d rounds of H=%d, batch %d, %d parameters, %d seed(s); %d validation and %d test samples\n",
		r.Task, r.Workers, r.Rounds, r.H, r.Batch, r.Params, r.Seeds, r.ValSamples, r.TestSamples)
	fmt.Fprintf(w, "%-23s %8s %17s %8s %14s %10s %9s %8s %10s %6s\n", "mode", "val_loss", "test_loss", "test_acc", "bytes/round", "ratio", "compress%", "agg%", "tokens/s", "agree")
	for _, m := range r.Modes {
		acc := "-"
		if m.TestAcc != nil {
			acc = fmt.Sprintf("%.4f", *m.TestAcc)
		}
		test := fmt.Sprintf("%.4f ± %.4f", m.TestLoss, m.TestLossSD)
		if _, err := fmt.Fprintf(w, "%-23s %8.4f %17s %8s %14.0f %9.1fx %8.2f%% %7.2f%% %10.0f %6v\n", m.Name, m.ValLoss, test, acc, m.BytesPerRound, m.CompressionRatio, 100*m.CompressShare, 100*m.AggregateShare, m.TokensPerS, m.Agree); err != nil {
			return err
		}
	}
	return nil
}
