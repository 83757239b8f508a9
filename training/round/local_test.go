package round

import (
	"bytes"
	"errors"
	"testing"

	"github.com/lowband/lowband/training"
)

// TestLocalStateRestoredEncodesTheSameBytes: a machine built from another's State and given
// its Local with SetLocal sends the same bytes for the same local work (the codec's
// residuals and warm starts went with it); without SetLocal it does not.
func TestLocalStateRestoredEncodesTheSameBytes(t *testing.T) {
	theta0 := testTheta(7)
	a := newMachine(t, testConfig("a", 0), theta0)
	if _, err := a.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.LocalDone(0, perturb(theta0, 1)); err != nil {
		t.Fatal(err)
	}
	rd, err := a.Close(0)
	if err != nil || rd.Start == nil {
		t.Fatalf("Close(0) = %+v, %v", rd, err)
	}
	local1 := perturb(rd.Start.Params, 2)
	ls, st := a.Local(), a.State()
	sendA, err := a.LocalDone(1, local1)
	if err != nil {
		t.Fatal(err)
	}
	for _, restore := range []bool{true, false} {
		b := newMachineAt(t, testConfig("a", 0), st)
		if restore {
			if err := b.SetLocal(ls); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := b.Start(); err != nil {
			t.Fatal(err)
		}
		sendB, err := b.LocalDone(1, local1)
		if err != nil {
			t.Fatal(err)
		}
		same := bytes.Equal(msgBytes(t, sendA.Send.Msg), msgBytes(t, sendB.Send.Msg))
		if same != restore {
			t.Errorf("restored %v: same bytes %v", restore, same)
		}
	}
}

// TestLocalStateRestoredStartsFromTheEagerPoint: with the eager start, a machine at the
// same round given the Local of another starts the next local work from the same point,
// and once it skips a round (a restart that may have signed it) from θ alone.
func TestLocalStateRestoredStartsFromTheEagerPoint(t *testing.T) {
	theta0 := testTheta(7)
	a := newMachine(t, eagerConfig("a", 1), theta0)
	if _, err := a.Start(); err != nil {
		t.Fatal(err)
	}
	rd, err := a.LocalDone(0, perturb(theta0, 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.LocalDone(1, perturb(rd.Start.Params, 2)); err != nil {
		t.Fatal(err)
	}
	rd, err = a.Close(0)
	if err != nil || rd.Start == nil || rd.Start.Round != 2 {
		t.Fatalf("Close(0) = %+v, %v", rd, err)
	}
	st := a.State()
	b := newMachineAt(t, eagerConfig("a", 1), st)
	if err := b.SkipLocal(2); err != nil {
		t.Fatal(err)
	}
	if err := b.SetLocal(a.Local()); err != nil {
		t.Fatal(err)
	}
	sb, err := b.Start()
	if err != nil || sb.Round != 2 || !bytes.Equal(tensorBits(sb.Params), tensorBits(rd.Start.Params)) {
		t.Fatalf("restored start %d, %v: not the eager point round 2 starts from", sb.Round, err)
	}
	c := newMachineAt(t, eagerConfig("a", 1), st)
	if err := c.SkipLocal(3); err != nil {
		t.Fatal(err)
	}
	if err := c.SetLocal(a.Local()); err != nil {
		t.Fatal(err)
	}
	if c.Startable() || c.own != nil {
		t.Fatalf("skipping to round 3: startable %v, own kept %v", c.Startable(), c.own != nil)
	}
	rd, err = c.Close(1)
	if err != nil || rd.Start == nil || rd.Start.Round != 3 || !bytes.Equal(tensorBits(rd.Start.Params), tensorBits(rd.Closed.Params)) {
		t.Fatalf("after skipping, round 3 must start from θ2: %+v, %v", rd.Start, err)
	}
}

// TestSetLocalRefusesAnotherModelsState: an own pseudo-gradient of another size, a share
// that is not finite, or a codec state of another model is refused, and nothing changes.
func TestSetLocalRefusesAnotherModelsState(t *testing.T) {
	theta0 := testTheta(7)
	a := newMachine(t, eagerConfig("a", 1), theta0)
	a.Start()
	a.LocalDone(0, perturb(theta0, 1))
	good := a.Local()
	for name, bad := range map[string]func(ls *LocalState){
		"own size":   func(ls *LocalState) { ls.Own = ls.Own[1:] },
		"share":      func(ls *LocalState) { ls.Share = -1 },
		"codec name": func(ls *LocalState) { ls.Codec.Tensors[0].Residual = nil },
	} {
		ls := a.Local()
		bad(&ls)
		b := newMachine(t, eagerConfig("a", 1), theta0)
		if err := b.SetLocal(ls); err == nil {
			t.Errorf("%s: accepted", name)
		}
		if len(b.Local().Codec.Tensors) != 0 {
			t.Errorf("%s: a refused state changed the codec", name)
		}
	}
	if err := newMachine(t, eagerConfig("a", 1), theta0).SetLocal(good); err != nil {
		t.Fatal(err)
	}
	if err := a.SkipLocal(5); !errors.Is(err, ErrOrder) {
		t.Fatalf("skipping past what the delay allows: %v", err)
	}
}

func msgBytes(t *testing.T, m interface{ Bytes() ([]byte, error) }) []byte {
	t.Helper()
	b, err := m.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newMachineAt(t *testing.T, cfg Config, st State) *Machine {
	t.Helper()
	m, err := New(cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestAbandonDropsTheWorkUnderWay: abandoned local work is never reported (its LocalDone
// is refused), changes nothing of the state or the codec, lets SkipLocal move past its
// round, and that round closes without this node's contribution while the next starts
// from θ (the delay starts it once the round before closes). Without work under way,
// Abandon is refused.
func TestAbandonDropsTheWorkUnderWay(t *testing.T) {
	theta0 := testTheta(7)
	m := newMachine(t, testConfig("a", 1), theta0)
	if err := m.Abandon(); !errors.Is(err, ErrOrder) {
		t.Fatalf("abandoning with no work under way: %v", err)
	}
	if _, err := m.Start(); err != nil {
		t.Fatal(err)
	}
	rd, err := m.LocalDone(0, perturb(theta0, 1))
	if err != nil || rd.Start == nil || rd.Start.Round != 1 {
		t.Fatalf("LocalDone(0) = %+v, %v", rd.Start, err)
	}
	root, codec := m.Root(), m.Local()
	if err := m.Abandon(); err != nil { // round 1's work, under way
		t.Fatal(err)
	}
	if _, err := m.LocalDone(1, perturb(rd.Start.Params, 2)); !errors.Is(err, ErrOrder) {
		t.Fatalf("LocalDone of abandoned work: %v", err)
	}
	if m.Root() != root || !bytes.Equal(msgBytesLocal(t, m.Local()), msgBytesLocal(t, codec)) {
		t.Fatal("abandoning changed the state or the codec")
	}
	if err := m.SkipLocal(2); err != nil {
		t.Fatal(err)
	}
	cl, err := m.Close(0)
	if err != nil || cl.Start == nil || cl.Start.Round != 2 || !bytes.Equal(tensorBits(cl.Start.Params), tensorBits(cl.Closed.Params)) {
		t.Fatalf("Close(0): %v; want round 2 to start from θ1", err)
	}
	if _, err := m.LocalDone(2, perturb(cl.Start.Params, 3)); err != nil {
		t.Fatal(err)
	}
	cl, err = m.Close(1)
	if err != nil || len(cl.Closed.Included) != 0 {
		t.Fatalf("Close(1) included %v (%v): round 1 closes without this node", cl.Closed.Included, err)
	}
}

// msgBytesLocal is the codec state of ls as bytes, to compare two.
func msgBytesLocal(t *testing.T, ls LocalState) []byte {
	t.Helper()
	var out []byte
	for _, ts := range ls.Codec.Tensors {
		out = append(out, tensorBits([]training.Tensor{{Data: ts.Residual}})...)
	}
	return out
}
