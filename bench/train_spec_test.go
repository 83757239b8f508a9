package bench

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/compress"
)

// tinySpec is the params of a small charlm network.
func tinySpec(t *testing.T, edit func(*configs.TrainingSpec)) *node.Params {
	t.Helper()
	if _, err := os.Stat(DefaultCorpus()); err != nil {
		t.Skipf("default corpus not found: %v", err)
	}
	tr := configs.DefaultTrainingSpecFor(configs.TaskCharLM)
	tr.Context, tr.Embed, tr.Hidden, tr.BatchSize, tr.InnerSteps = 4, 4, []int{16, 16}, 4, 2
	tr.Compression.MinLowRank, tr.Compression.TargetRatio = 64, 0
	if edit != nil {
		edit(&tr)
	}
	s := &configs.Spec{Version: configs.SpecVersion, Name: "bench", Run: "r1", Training: tr}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	p, err := node.NewParams(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// A run from a spec trains the network's model: θ_0 of node.Params, with the network's
// 256-token vocabulary rather than the corpus's own, and the spec's recipe.
func TestFromSpecRunsTheNetworkModel(t *testing.T) {
	p := tinySpec(t, nil)
	o := FromSpec(p)
	if o.H != 2 || o.Batch != 4 || o.TotalSteps != p.Training.Inner.TotalSteps || o.Compress.MinLowRank != 64 || o.DelayStart != p.Training.Outer.Start {
		t.Fatalf("options %+v do not follow the spec", o)
	}
	o.fill()
	tk, err := loadTask(o)
	if err != nil {
		t.Fatal(err)
	}
	m, err := tk.newModel(o.Seed)
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.Initial()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tensorBytes(training.Snapshot(m.Params())), tensorBytes(st.Params); string(got) != string(want) {
		t.Fatalf("the bench's θ_0 (%d params) is not the network's (%d)", training.NumParams(m.Params()), len(training.Flatten(st.Params)))
	}
	o.Workers, o.Rounds, o.EvalSamples = 2, 2, 64
	res, err := RunTrain(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, mr := range res.Modes {
		if !(mr.TestLoss > 0) || !mr.Agree {
			t.Errorf("%s: %+v", mr.Name, mr)
		}
	}
}

// The compressed modes of a spec run check every shard as the network's validators do: a
// norm bound no honest shard meets makes them fail.
func TestFromSpecChecksShardsAsTheNetwork(t *testing.T) {
	p := tinySpec(t, func(tr *configs.TrainingSpec) { tr.Compression.MaxNorm = 1e-12 })
	o := FromSpec(p)
	o.Workers, o.Rounds, o.EvalSamples, o.Modes = 2, 1, 64, []string{ModeCompress}
	_, err := RunTrain(context.Background(), o, nil)
	if !errors.Is(err, compress.ErrNormTooLarge) {
		t.Fatalf("got %v, want the content check's norm error", err)
	}
}

// A recipe with outer.merge gives the delayed mode a merge a tenth of the way into the
// local work (at least one step); without it, none.
func TestFromSpecMergeStep(t *testing.T) {
	for _, c := range []struct {
		merge bool
		h     int
		want  int
	}{{false, 25, 0}, {true, 25, 3}, {true, 10, 1}, {true, 2, 1}, {true, 1, 0}} {
		o := FromSpec(tinySpec(t, func(tr *configs.TrainingSpec) { tr.Outer.Merge, tr.InnerSteps = c.merge, c.h }))
		if o.MergeStep != c.want {
			t.Errorf("merge %v, H %d: merge step %d, want %d", c.merge, c.h, o.MergeStep, c.want)
		}
	}
}
