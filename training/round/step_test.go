package round

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/lowband/lowband/training"
)

func floatBits(xs []float64) []byte {
	out := make([]byte, 0, 8*len(xs))
	for _, x := range xs {
		out = binary.LittleEndian.AppendUint64(out, math.Float64bits(x))
	}
	return out
}

// Step over a round's contributions gives the bytes of θ and momentum that CloseWith gives
// on a machine holding them, round after round (so with momentum), and leaves its input
// alone.
func TestStepEqualsCloseWithBitForBit(t *testing.T) {
	stepEqualsCloseWith(t, testConfig("a", 0))
}

// The same with shared bases (compress.Config.SharedRank), which Step derives from its
// state's momentum as the machine does from its own.
func TestStepEqualsCloseWithSharedBases(t *testing.T) {
	cfg := testConfig("a", 0)
	cfg.Compress.SharedRank, cfg.Compress.ByteBudget = 4, 600
	stepEqualsCloseWith(t, cfg)
}

func stepEqualsCloseWith(t *testing.T, cfg Config) {
	t.Helper()
	m := newMachine(t, cfg, testTheta(4))
	weights := map[string]float64{"a": 1, "b": 2, "c": 0.5, "z": 3} // d absent: left out
	start, err := m.Start()
	if err != nil {
		t.Fatal(err)
	}
	for r := uint64(0); r < 3; r++ {
		rd, err := m.LocalDone(r, perturb(start.Params, 10+r))
		if err != nil {
			t.Fatal(err)
		}
		cs := contributions(t, start.Params, r, []string{"b", "c", "d"})
		for _, c := range cs {
			if err := m.Receive(c); err != nil {
				t.Fatal(err)
			}
		}
		before := m.State()
		rootBefore := before.Root()
		own := Contribution{Round: r, Peer: "a", Weight: 1, Msg: rd.Send.Msg}
		next, closed, err := Step(cfg, before, append([]Contribution{cs[2], own}, cs[:2]...), weights)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.CloseWith(r, weights)
		if err != nil {
			t.Fatal(err)
		}
		after := m.State()
		if !bytes.Equal(tensorBits(next.Params), tensorBits(after.Params)) || !bytes.Equal(floatBits(next.Momentum), floatBits(after.Momentum)) {
			t.Fatalf("round %d: Step's θ or momentum differs from CloseWith's", r)
		}
		if next.Round != after.Round || next.Root() != after.Root() || len(next.Momentum) == 0 {
			t.Fatalf("round %d: Step gives round %d root %x, CloseWith round %d root %x", r, next.Round, next.Root(), after.Round, after.Root())
		}
		if !slices.Equal(closed.Included, got.Closed.Included) || !slices.Equal(closed.Included, []string{"a", "b", "c"}) {
			t.Fatalf("round %d: Step included %v, CloseWith %v", r, closed.Included, got.Closed.Included)
		}
		if !bytes.Equal(tensorBits(closed.Params), tensorBits(after.Params)) {
			t.Fatalf("round %d: Closed.Params is not θ after the step", r)
		}
		if before.Root() != rootBefore {
			t.Fatalf("round %d: Step modified its input state", r)
		}
		start = *got.Start
	}
}

// Step refuses contributions of another round, twice the same peer and a state of another
// shape; with nothing weighted it only advances the round.
func TestStepRefusalsAndEmptyRound(t *testing.T) {
	cfg := testConfig("a", 0)
	theta := testTheta(4)
	st := State{Round: 0, Params: theta}
	cs := contributions(t, theta, 0, []string{"b", "c"})
	w := map[string]float64{"b": 1, "c": 1}
	other := cs[0]
	other.Round = 1
	for name, in := range map[string][]Contribution{"round": {other}, "duplicate": {cs[0], cs[0]}} {
		if _, _, err := Step(cfg, st, in, w); err == nil {
			t.Errorf("%s: Step accepted", name)
		}
	}
	if _, _, err := Step(cfg, State{Params: theta, Momentum: []float64{1}}, cs, w); err == nil {
		t.Error("Step accepted a momentum of the wrong size")
	}
	next, closed, err := Step(cfg, st, cs, nil)
	if err != nil || next.Round != 1 || len(closed.Included) != 0 || next.Momentum != nil ||
		!bytes.Equal(tensorBits(next.Params), tensorBits(theta)) {
		t.Fatalf("an empty round: %v, round %d, included %v", err, next.Round, closed.Included)
	}
}

// runTwo drives a delay-1 machine through local work of rounds 0 and 1, with peer b's
// contributions, closes round 0 and returns it with round 1 still open (b's contribution
// held, a's own done) and round 2's local work started.
func runTwo(t *testing.T) (*Machine, *Start) {
	t.Helper()
	m := newMachine(t, testConfig("a", 1), testTheta(4))
	s, err := m.Start()
	if err != nil {
		t.Fatal(err)
	}
	rd, err := m.LocalDone(0, perturb(s.Params, 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.LocalDone(1, perturb(rd.Start.Params, 2)); err != nil {
		t.Fatal(err)
	}
	for r := uint64(0); r < 2; r++ {
		if err := m.Receive(contributions(t, s.Params, r, []string{"b"})[0]); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := m.Close(0)
	if err != nil {
		t.Fatal(err)
	}
	return m, cl.Start
}

// Reset to the machine's own state changes nothing: the next local work's message (which
// the codec's error feedback shapes) and the next close give the same bytes as a machine
// never reset. Reset to another state puts exactly that state in force, keeping the
// contributions of the open round.
func TestResetKeepsLocalStateAndOpenContributions(t *testing.T) {
	a, sa := runTwo(t)
	b, sb := runTwo(t)
	if err := b.Reset(b.State()); err != nil {
		t.Fatal(err)
	}
	ra, rb := workAndClose(t, a, sa), workAndClose(t, b, sb)
	if !bytes.Equal(ra, rb) || a.State().Root() != b.State().Root() {
		t.Fatal("a machine reset to its own state diverges from one never reset")
	}

	c, _ := runTwo(t)
	other := State{Round: 1, Params: perturb(testTheta(4), 9), Momentum: make([]float64, len(training.Flatten(testTheta(4))))}
	if err := c.Reset(other); err != nil {
		t.Fatal(err)
	}
	if c.State().Root() != other.Root() {
		t.Fatal("after Reset the machine's state is not the one given")
	}
	if !slices.Equal(c.Pending(1), []string{"a", "b"}) {
		t.Fatalf("after Reset round 1 holds %v, want [a b]", c.Pending(1))
	}
	if err := c.Reset(State{Round: 1, Params: testTheta(4)[:1]}); err == nil {
		t.Fatal("Reset accepted a state of another shape")
	}
}

// workAndClose does round 2's local work from s, closes round 1 and returns the bytes of
// the message round 2's work made.
func workAndClose(t *testing.T, m *Machine, s *Start) []byte {
	t.Helper()
	out, err := m.LocalDone(2, perturb(s.Params, 3))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Close(1); err != nil {
		t.Fatal(err)
	}
	var b []byte
	for _, sh := range out.Send.Shards {
		b = append(b, sh.Data...)
	}
	return b
}

// TestResetDuringLocalWorkKeepsItsStart: local work under way when a Reset puts another θ
// in force still ends with the pseudo-gradient from the point it started from.
func TestResetDuringLocalWorkKeepsItsStart(t *testing.T) {
	for _, cfg := range []Config{testConfig("a", 1), eagerConfig("a", 1)} {
		a, b := newMachine(t, cfg, testTheta(1)), newMachine(t, cfg, testTheta(1))
		sa, _ := a.Start()
		sb, _ := b.Start()
		other := a.State()
		other.Params = testTheta(9)
		if err := a.Reset(other); err != nil {
			t.Fatal(err)
		}
		ra, err := a.LocalDone(0, perturb(sa.Params, 2))
		if err != nil {
			t.Fatal(err)
		}
		rb, err := b.LocalDone(0, perturb(sb.Params, 2))
		if err != nil {
			t.Fatal(err)
		}
		ba, _ := ra.Send.Msg.Bytes()
		bb, _ := rb.Send.Msg.Bytes()
		if !bytes.Equal(ba, bb) {
			t.Fatalf("%s start: the contribution after a Reset is not the pseudo-gradient from the work's start", cfg.StartPoint)
		}
	}
}
