package round

import (
	"slices"
	"testing"

	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/aggregate"
	"github.com/lowband/lowband/training/compress"
)

// A contribution far from the others (a sign-flipped, scaled step) is included, and under
// filtered_mean named in Closed.Dropped, by Step and by CloseWith alike; under the mean
// nothing is dropped.
func TestClosedNamesTheContributionTheRuleDropped(t *testing.T) {
	theta0 := testTheta(6)
	for _, method := range []aggregate.Method{aggregate.FilteredMean, aggregate.Mean} {
		cfg := testConfig("a", 0)
		cfg.Aggregate = aggregate.Config{Method: method}
		cs := contributions(t, theta0, 0, []string{"b", "c", "d", "e"})
		cs = append(cs, flipped(t, theta0, "f"))
		weights := map[string]float64{"a": 1, "b": 1, "c": 1, "d": 1, "e": 1, "f": 1}

		m := newMachine(t, cfg, theta0)
		if _, err := m.Start(); err != nil {
			t.Fatal(err)
		}
		rd, err := m.LocalDone(0, perturb(theta0, 1))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if err := m.Receive(c); err != nil {
				t.Fatal(err)
			}
		}
		own := Contribution{Round: 0, Peer: "a", Msg: rd.Send.Msg}
		_, stepped, err := Step(cfg, State{Params: theta0}, append(slices.Clone(cs), own), weights)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.CloseWith(0, weights)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"f"}
		if method != aggregate.FilteredMean {
			want = nil
		}
		for what, cl := range map[string]*Closed{"Step": &stepped, "CloseWith": got.Closed} {
			if !slices.Equal(cl.Dropped, want) || len(cl.Included) != 6 {
				t.Fatalf("%s, %s: dropped %v of %v, want %v of all 6", method, what, cl.Dropped, cl.Included, want)
			}
		}
	}
}

// flipped is peer's contribution of ten times the sign-flipped step an honest peer takes.
func flipped(t *testing.T, theta []training.Tensor, peer string) Contribution {
	t.Helper()
	pm := newMachine(t, testConfig(peer, 0), theta)
	if _, err := pm.Start(); err != nil {
		t.Fatal(err)
	}
	local := perturb(theta, 99)
	for i, x := range local {
		for j := range x.Data {
			x.Data[j] = theta[i].Data[j] - 10*(x.Data[j]-theta[i].Data[j])
		}
	}
	rd, err := pm.LocalDone(0, local)
	if err != nil {
		t.Fatal(err)
	}
	var parts []*compress.Message
	for _, sh := range rd.Send.Shards {
		part, err := compress.DecodeShard(sh.Data, compress.DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, part)
	}
	msg, err := compress.Join(parts)
	if err != nil {
		t.Fatal(err)
	}
	return Contribution{Round: 0, Peer: peer, Weight: 1, Msg: msg}
}
