package bench

import (
	"context"
	"os"
	"testing"
)

// TestRunTrainAdversariesChangeTheRun: with sign-flipping workers the compressed mode's
// workers still agree, but end elsewhere than without them; a kind that is not statistical,
// or as many adversaries as workers, is refused.
func TestRunTrainAdversariesChangeTheRun(t *testing.T) {
	if _, err := os.Stat(DefaultCorpus()); err != nil {
		t.Skipf("default corpus not found: %v", err)
	}
	o := DefaultTrainOptions("charlm")
	o.Workers, o.Rounds, o.H, o.Batch, o.EvalSamples = 3, 3, 2, 4, 64
	o.Context, o.Embed, o.Hidden = 4, 4, []int{16, 16}
	o.Compress.MinLowRank = 64
	o.Modes = []string{ModeCompress}
	clean, err := RunTrain(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	o.Adversary, o.Adversaries = "sign-flip", 1
	attacked, err := RunTrain(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, a := clean.Modes[0], attacked.Modes[0]
	if !a.Agree || a.TestLoss == c.TestLoss {
		t.Fatalf("with a sign-flipper: agree %v, test loss %v (clean %v)", a.Agree, a.TestLoss, c.TestLoss)
	}
	for _, bad := range []TrainOptions{{Adversary: "equivocate", Adversaries: 1}, {Adversary: "sign-flip", Adversaries: 3}} {
		b := o
		b.Adversary, b.Adversaries = bad.Adversary, bad.Adversaries
		if _, err := RunTrain(context.Background(), b, nil); err == nil {
			t.Errorf("%d %s adversaries of 3 workers accepted", b.Adversaries, b.Adversary)
		}
	}
}
