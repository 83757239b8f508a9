package node

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/p2p/p2ptest"
	"github.com/lowband/lowband/training/round"
)

// syntheticSpec is the devnet spec on the synthetic task, with small H and the given
// genesis stakes (peer ID -> stake), validated.
func syntheticSpec(t *testing.T, stakes map[string]uint64) *configs.Spec {
	t.Helper()
	s, err := configs.ParseSpec("devnet", configs.DevnetSpec)
	if err != nil {
		t.Fatal(err)
	}
	s.Training = configs.TrainingSpec{Task: configs.TaskSynthetic, InnerSteps: 5}
	s.Incentives.Stakes = stakes
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	return s
}

// testPeerID is a canonical peer ID of a fresh key.
func testPeerID(t *testing.T) string {
	t.Helper()
	id, err := peer.IDFromPrivateKey(p2ptest.Key())
	if err != nil {
		t.Fatal(err)
	}
	return id.String()
}

func TestTrainerLowersHeldOutLoss(t *testing.T) {
	p, err := NewParams(syntheticSpec(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	self := testPeerID(t)
	d, err := loadData(p, "", self)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := newTrainer(p, d, self)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := newEvaluator(p, d)
	if err != nil {
		t.Fatal(err)
	}
	// Each inner step and each evaluation holds the compute gate (Options.Compute) while
	// it runs, and only then.
	var taken, released atomic.Int64
	gate := func() func() {
		taken.Add(1)
		return func() { released.Add(1) }
	}
	tr.compute, ev.compute = gate, gate
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done, evals := make(chan localDone), make(chan evalResult)
	go tr.run(ctx, done)
	go ev.run(ctx, evals)

	st, err := p.Initial()
	if err != nil {
		t.Fatal(err)
	}
	ev.submit(evalJob{initial: true, params: st.Params})
	first := <-evals
	params := st.Params
	for r := uint64(0); r < 12; r++ {
		if err := tr.start(round.Start{Round: r, Params: params}); err != nil {
			t.Fatal(err)
		}
		out := <-done
		if out.err != nil || out.round != r {
			t.Fatalf("round %d: %+v", r, out)
		}
		params = out.params
	}
	ev.submit(evalJob{round: 11, params: params})
	last := <-evals
	if first.err != nil || last.err != nil || !first.initial || last.round != 11 {
		t.Fatalf("evals %+v %+v", first, last)
	}
	t.Logf("held-out loss %.4f -> %.4f", first.loss, last.loss)
	if want := int64(12*p.Training.InnerSteps + 2); taken.Load() != want || released.Load() != want {
		t.Errorf("compute gate taken %d and released %d times, want %d", taken.Load(), released.Load(), want)
	}
	if !(last.loss < 0.8*first.loss) {
		t.Fatalf("held-out loss %.4f -> %.4f after 60 inner steps", first.loss, last.loss)
	}
}

func TestCharLMDataMissingIsClear(t *testing.T) {
	s, err := configs.ParseSpec("devnet", configs.DevnetSpec)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewParams(s)
	if err != nil {
		t.Fatal(err)
	}
	_, err = loadData(p, "/nonexistent/corpus.txt", testPeerID(t))
	if err == nil || !errors.Is(err, ErrNoData) || !strings.Contains(err.Error(), "training.data") {
		t.Fatalf("got %v", err)
	}
}
