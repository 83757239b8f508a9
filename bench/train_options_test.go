package bench

import (
	"context"
	"os"
	"strings"
	"testing"
)

// Momentum 0 is plain outer SGD, a setting of its own: filling defaults must keep it, in
// the dense and in the compressed modes.
func TestTrainOptionsKeepZeroMomentum(t *testing.T) {
	o := DefaultTrainOptions("fmnist")
	o.Momentum, o.CompressOuterLR, o.CompressMomentum = 0, 1, 0
	o.fill()
	if o.Momentum != 0 || o.CompressMomentum != 0 || o.CompressOuterLR != 1 {
		t.Fatalf("after fill: momentum %v, compressed modes %v / %v; want 0, 1 / 0", o.Momentum, o.CompressOuterLR, o.CompressMomentum)
	}
}

func TestTrainOptionsRefuseBadOuter(t *testing.T) {
	for _, mut := range []func(*TrainOptions){
		func(o *TrainOptions) { o.Momentum = 1 },
		func(o *TrainOptions) { o.CompressMomentum = -0.1 },
		func(o *TrainOptions) { o.OuterLR = -1 },
	} {
		o := DefaultTrainOptions("charlm")
		mut(&o)
		o.fill()
		if err := o.validate(); err == nil || !strings.Contains(err.Error(), "outer") {
			t.Errorf("%+v: got %v", o, err)
		}
	}
}

// The delayed mode's own outer step changes the delayed mode only; unset, it is the
// compressed modes' step.
func TestDelayOuterStepAppliesToTheDelayedModeOnly(t *testing.T) {
	if _, err := os.Stat(DefaultCorpus()); err != nil {
		t.Skipf("default corpus not found: %v", err)
	}
	o := DefaultTrainOptions("charlm")
	o.Workers, o.Rounds, o.H, o.Batch, o.EvalSamples = 2, 3, 2, 4, 64
	o.Context, o.Embed, o.Hidden = 4, 4, []int{16, 16}
	o.Compress.MinLowRank = 64
	o.Modes = []string{ModeCompress, ModeCompressDelay}
	same, err := RunTrain(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if same.Modes[1].TestLoss == same.Modes[0].TestLoss {
		t.Fatal("the two modes gave the same loss")
	}
	o.DelayOuterLR, o.DelayMomentum = 0.9, 0
	own, err := RunTrain(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if own.Modes[0].TestLoss != same.Modes[0].TestLoss {
		t.Errorf("the undelayed mode changed: %v, was %v", own.Modes[0].TestLoss, same.Modes[0].TestLoss)
	}
	if own.Modes[1].TestLoss == same.Modes[1].TestLoss {
		t.Errorf("the delayed mode did not change with its own outer step: %v", own.Modes[1].TestLoss)
	}
}
