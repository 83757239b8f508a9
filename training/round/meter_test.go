package round

import (
	"slices"
	"testing"

	"github.com/lowband/lowband/training/compress"
)

// phaseLog records the Meter calls it receives.
type phaseLog struct{ calls []string }

func (l *phaseLog) Begin(p Phase) { l.calls = append(l.calls, "+"+p.String()) }
func (l *phaseLog) End(p Phase)   { l.calls = append(l.calls, "-"+p.String()) }

func TestMeterPhases(t *testing.T) {
	theta0 := testTheta(1)
	log := &phaseLog{}
	cfg := testConfig("a", 0)
	cfg.Meter = log
	a := newMachine(t, cfg, theta0)
	b := newMachine(t, testConfig("b", 0), theta0)
	sa, _ := a.Start()
	sb, _ := b.Start()
	if _, err := a.LocalDone(0, perturb(sa.Params, 1)); err != nil {
		t.Fatal(err)
	}
	rb, err := b.LocalDone(0, perturb(sb.Params, 2))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Receive(Contribution{Round: 0, Peer: "b", Weight: 1, Msg: rb.Send.Msg}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Close(0); err != nil {
		t.Fatal(err)
	}
	// The outer step takes each range of the aggregate as it is made: one range here.
	want := []string{"+encode", "-encode", "+decode", "-decode", "+decode", "-decode", "+aggregate", "-aggregate", "+outer", "-outer", "+aggregate", "-aggregate"}
	if !slices.Equal(log.calls, want) {
		t.Errorf("meter calls %v, want %v", log.calls, want)
	}
	if got := Phase(9).String(); got != "unknown" {
		t.Errorf("Phase(9) = %q", got)
	}
}

// A rejected contribution is still timed as a decode.
func TestMeterRejected(t *testing.T) {
	theta0 := testTheta(1)
	log := &phaseLog{}
	cfg := testConfig("a", 0)
	cfg.Meter = log
	cfg.Compress = compress.Config{RankMin: 2, RankMax: 4, MinLowRank: 16, MaxShardBytes: compress.MinShardBytes, Seed: 3}
	a := newMachine(t, cfg, theta0)
	sa, _ := a.Start()
	if _, err := a.LocalDone(0, perturb(sa.Params, 1)); err != nil {
		t.Fatal(err)
	}
	other := testTheta(7)[:1] // a message of the wrong tensors
	enc, err := compress.NewEncoder(cfg.Compress)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := enc.Encode([]compress.Tensor{{Name: "x", Shape: other[0].Shape, Data: other[0].Data}})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Receive(Contribution{Round: 0, Peer: "b", Weight: 1, Msg: msg}); err != nil {
		t.Fatal(err)
	}
	rd, err := a.Close(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rd.Closed.Rejected) != 1 || !slices.Equal(log.calls, []string{"+encode", "-encode", "+decode", "-decode", "+decode", "-decode", "+aggregate", "-aggregate", "+outer", "-outer", "+aggregate", "-aggregate"}) {
		t.Errorf("rejected %v, meter calls %v", rd.Closed.Rejected, log.calls)
	}
}
