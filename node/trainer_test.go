package node

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/p2p/p2ptest"
	"github.com/lowband/lowband/training"
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

// syntheticData is the devnet's synthetic recipe and a node's data for it.
func syntheticData(t *testing.T) (*Params, *taskData, string) {
	t.Helper()
	p, err := NewParams(syntheticSpec(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	self := testPeerID(t)
	d, err := loadData(p, "", self)
	if err != nil {
		t.Fatal(err)
	}
	return p, d, self
}

func TestTrainerLowersHeldOutLoss(t *testing.T) {
	p, d, self := syntheticData(t)
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

// A merging close's shift (core.Shift) moves the local work under way: handed over before
// the work begins, it is the same as starting from the moved point; handed over between
// inner steps, the work goes on from the moved parameters; once the work has ended, the
// trainer refuses it and the loop adds it to what the work reported.
func TestTrainerTakesAShiftOfItsWork(t *testing.T) {
	p, d, self := syntheticData(t)
	st, err := p.Initial()
	if err != nil {
		t.Fatal(err)
	}
	shiftOf := func(r uint64, v float64) *core.Shift {
		s := &core.Shift{Round: r}
		for _, tt := range st.Params {
			data := make([]float64, len(tt.Data))
			for i := range data {
				data[i] = v
			}
			s.Params = append(s.Params, training.Tensor{Name: tt.Name, Shape: tt.Shape, Data: data})
		}
		return s
	}
	copyOf := func(ts []training.Tensor) []training.Tensor {
		out := make([]training.Tensor, len(ts))
		for i, tt := range ts {
			out[i] = training.Tensor{Name: tt.Name, Shape: tt.Shape, Data: slices.Clone(tt.Data)}
		}
		return out
	}
	// work runs round 3 from start; before, when set, runs before the work starts
	// (gateAt 0) or while the gate of the gateAt-th step is held (the step before it
	// done, the shift for this one already looked for).
	work := func(start []training.Tensor, gateAt int, before func(tr *trainer)) ([]training.Tensor, *trainer) {
		tr, err := newTrainer(p, d, self)
		if err != nil {
			t.Fatal(err)
		}
		held, release := make(chan struct{}), make(chan struct{})
		calls := 0
		tr.compute = func() func() {
			calls++
			if calls == gateAt {
				close(held)
				<-release
			}
			return func() {}
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan localDone, 1)
		go tr.run(ctx, done)
		if gateAt == 0 && before != nil {
			before(tr)
		}
		if err := tr.start(round.Start{Round: 3, Params: copyOf(start)}); err != nil {
			t.Fatal(err)
		}
		if gateAt > 0 {
			<-held
			before(tr)
			close(release)
		}
		out := <-done
		if out.err != nil {
			t.Fatal(out.err)
		}
		return out.params, tr
	}
	plain, _ := work(st.Params, 0, nil)

	// Before its first step: the same bits as a start at the moved point.
	moved := copyOf(st.Params)
	if err := training.AddTo(moved, shiftOf(3, 0.01).Params); err != nil {
		t.Fatal(err)
	}
	fromMoved, _ := work(moved, 0, nil)
	shiftedFirst, _ := work(st.Params, 0, func(tr *trainer) {
		if !tr.shift(shiftOf(3, 0.01)) {
			t.Fatal("a shift of the work under way was refused")
		}
	})
	if !bytes.Equal(tensorBytesOf(fromMoved), tensorBytesOf(shiftedFirst)) {
		t.Fatal("a shift taken before the first step differs from starting at the moved point")
	}
	// reference runs k inner steps, adds the shift, and runs the rest.
	reference := func(k int) []training.Tensor {
		tr, err := newTrainer(p, d, self)
		if err != nil {
			t.Fatal(err)
		}
		params := copyOf(st.Params)
		if err := training.Adopt(tr.inner.Model.Params(), params); err != nil {
			t.Fatal(err)
		}
		for i := range tr.h {
			if i == k {
				if err := training.AddTo(params, shiftOf(3, 0.01).Params); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := tr.step(); err != nil {
				t.Fatal(err)
			}
		}
		if k == tr.h {
			if err := training.AddTo(params, shiftOf(3, 0.01).Params); err != nil {
				t.Fatal(err)
			}
		}
		return params
	}
	// Handed over while the second step runs: taken before the third.
	mid, tr := work(st.Params, 2, func(tr *trainer) {
		if !tr.shift(shiftOf(3, 0.01)) {
			t.Fatal("a shift of the work under way was refused")
		}
	})
	if bytes.Equal(tensorBytesOf(mid), tensorBytesOf(plain)) {
		t.Fatal("a shift between steps changed nothing")
	}
	if !bytes.Equal(tensorBytesOf(mid), tensorBytesOf(reference(2))) {
		t.Fatal("a shift handed over during the second step is not the same as one added after it")
	}
	// Handed over while the last step runs: added to what the work reports.
	last, _ := work(st.Params, p.Training.InnerSteps, func(tr *trainer) {
		if !tr.shift(shiftOf(3, 0.01)) {
			t.Fatal("a shift of the work under way was refused")
		}
	})
	if !bytes.Equal(tensorBytesOf(last), tensorBytesOf(reference(p.Training.InnerSteps))) {
		t.Fatal("a shift handed over during the last step is not added to the work's result")
	}
	// Round 3's work has ended: its shift is refused; a shift of another round is never
	// taken by it.
	if tr.shift(shiftOf(3, 0.01)) {
		t.Fatal("a shift of ended work was taken")
	}
	other, _ := work(st.Params, 2, func(tr *trainer) { tr.shift(shiftOf(4, 0.5)) })
	if !bytes.Equal(tensorBytesOf(other), tensorBytesOf(plain)) {
		t.Fatal("round 3's work took a shift of round 4")
	}
}

func tensorBytesOf(ts []training.Tensor) []byte {
	var b []byte
	for _, tt := range ts {
		for _, v := range tt.Data {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
		}
	}
	return b
}
