package round

import (
	"bytes"
	"slices"
	"testing"
)

// CloseWith aggregates exactly the contributions with a positive weight, with that weight:
// θ after it has the bytes of a Close on a machine that only ever held those, with those
// weights. The others (this node's own included) are in neither list.
func TestCloseWithAggregatesOnlyWeighted(t *testing.T) {
	theta0 := testTheta(4)
	cs := contributions(t, theta0, 0, []string{"b", "c", "d", "e"})
	weights := map[string]float64{"b": 2, "d": 0.5, "e": 0, "z": 1} // c absent, e zero, z holds nothing

	m := newMachine(t, testConfig("a", 0), theta0)
	if _, err := m.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.LocalDone(0, perturb(theta0, 1)); err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if err := m.Receive(c); err != nil {
			t.Fatal(err)
		}
	}
	got, err := m.CloseWith(0, weights)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Closed.Included, []string{"b", "d"}) || len(got.Closed.Rejected) != 0 {
		t.Fatalf("included %v, rejected %v; want [b d], none", got.Closed.Included, got.Closed.Rejected)
	}

	// The reference is b itself (its own contribution is the one contributions made for it,
	// same encoder, same local work), weighted 2, holding d's alone besides.
	bcfg := testConfig("b", 0)
	bcfg.Weight = 2
	ref := newMachine(t, bcfg, theta0)
	if _, err := ref.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := ref.LocalDone(0, perturb(theta0, 100)); err != nil {
		t.Fatal(err)
	}
	d := cs[2]
	d.Weight = weights["d"]
	if err := ref.Receive(d); err != nil {
		t.Fatal(err)
	}
	want, err := ref.Close(0)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(tensorBits(got.Closed.Params), tensorBits(want.Closed.Params)) {
		t.Fatal("θ after CloseWith differs from a close over the weighted contributions alone")
	}
	if got.Start == nil || got.Start.Round != 1 {
		t.Fatalf("next local work not started: %+v", got.Start)
	}
}

// Close is CloseWith with the weights the contributions came with.
func TestCloseIsCloseWithTheirWeights(t *testing.T) {
	theta0 := testTheta(5)
	cs := contributions(t, theta0, 0, []string{"b", "c"})
	run := func(close func(m *Machine) (Ready, error)) []byte {
		m := newMachine(t, testConfig("a", 0), theta0)
		if _, err := m.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := m.LocalDone(0, perturb(theta0, 1)); err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if err := m.Receive(c); err != nil {
				t.Fatal(err)
			}
		}
		rd, err := close(m)
		if err != nil {
			t.Fatal(err)
		}
		return tensorBits(rd.Closed.Params)
	}
	a := run(func(m *Machine) (Ready, error) { return m.Close(0) })
	b := run(func(m *Machine) (Ready, error) {
		return m.CloseWith(0, map[string]float64{"a": 1, "b": cs[0].Weight, "c": cs[1].Weight})
	})
	if !bytes.Equal(a, b) {
		t.Fatal("Close and CloseWith with the same weights give different θ")
	}
}
