package bench

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/lowband/lowband/node"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/compress"
	"github.com/lowband/lowband/training/round"
)

// runMachines runs DiLoCo through one round.Machine per worker, exchanging the real shard
// bytes: each worker decodes every other worker's shards (in a shuffled order of senders),
// so the check that all workers end with byte-identical parameters also checks that
// arrival order does not matter. The simNet it returns holds the final θ, the bytes sent by
// all workers, whether all workers agree, worker 0's codec statistics per round, and the CPU
// time of the machines' phases (summed over workers).
func runMachines(ctx context.Context, opt TrainOptions, ws *workers, theta0 []training.Tensor, delay int) (*simNet, error) {
	W := opt.Workers
	start, lr, mom, mix, sent := round.StartGlobal, opt.CompressOuterLR, opt.CompressMomentum, 0.0, 0.0
	if delay == 1 {
		lr, mom = opt.DelayOuterLR, opt.DelayMomentum
		if opt.DelayStart != "" {
			start, mix = opt.DelayStart, opt.DelayMix
		}
		if start == round.StartEager {
			sent = opt.StartSent
		}
	}
	merge := delay == 1 && opt.MergeStep > 0
	ms := make([]*round.Machine, W)
	meters := make([]*phaseMeter, W)
	starts := make([][]training.Tensor, W)
	for w := range ms {
		meters[w] = &phaseMeter{}
		cc := opt.Compress
		cc.Seed = opt.Compress.Seed + uint64(w)
		if opt.TargetRatio > 0 {
			cc.ByteBudget, cc.FirstBudget = byteBudget(theta0, opt.TargetRatio), opt.FirstBudget
		}
		rc := round.Config{Self: peerID(w), Weight: 1, Delay: delay, OuterLR: lr, Momentum: mom, StartPoint: start, StartMix: mix, StartResidual: opt.StartResidual, StartSent: sent, Merge: merge, MaxNorm: opt.maxNorm(), Compress: cc, Aggregate: opt.Aggregate, Meter: meters[w]}
		m, err := round.New(rc, round.State{Params: theta0})
		if err != nil {
			return nil, err
		}
		s, err := m.Start()
		if err != nil {
			return nil, err
		}
		ms[w], starts[w] = m, s.Params
	}
	sim := &simNet{ms: ms, meters: meters, starts: starts, agree: true, check: opt.shardCheck(), merge: merge}
	advs := make([]*node.AdversaryUpdater, opt.Adversaries)
	for w := range advs {
		a, err := node.NewAdversaryUpdater(opt.Adversary, peerID(w))
		if err != nil {
			return nil, err
		}
		advs[w] = a
	}
	for r := 0; r < opt.Rounds; r++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var locals [][]training.Tensor
		var err error
		if merge && r > 0 {
			// Round r-1's contributions arrive after MergeStep steps of round r's work:
			// it closes then, and the work goes on from where the close moved it.
			if _, err = localSteps(opt, ws, sim.starts, opt.MergeStep); err != nil {
				return nil, err
			}
			if err = sim.closeDue(); err != nil {
				return nil, err
			}
			for w, shift := range sim.shifts {
				if shift == nil {
					return nil, fmt.Errorf("worker %d: round %d did not close during round %d's work", w, r-1, r)
				}
				if err := training.AddTo(training.Views(ws.models[w].Params()), shift); err != nil {
					return nil, err
				}
				if w < len(advs) { // an adversary's update reads its start, which moved too
					if err := training.AddTo(sim.starts[w], shift); err != nil {
						return nil, err
					}
				}
			}
			locals, err = localSteps(opt, ws, nil, opt.H-opt.MergeStep)
		} else {
			locals, err = localPhase(opt, ws, sim.starts)
		}
		if err != nil {
			return nil, err
		}
		for w, a := range advs {
			if locals[w], err = a.Update(uint64(r), sim.starts[w], locals[w]); err != nil {
				return nil, err
			}
		}
		if err := sim.round(uint64(r), locals); err != nil {
			return nil, err
		}
	}
	for _, m := range ms {
		m.Finish()
	}
	if err := sim.closeDue(); err != nil {
		return nil, err
	}
	for _, m := range meters {
		sim.spent.add(m.spent)
	}
	return sim, nil
}

// phaseTimes is CPU time per round.Phase.
type phaseTimes [4]time.Duration

func (p *phaseTimes) add(q phaseTimes) {
	for i := range p {
		p[i] += q[i]
	}
}

// codec is the time spent compressing and decoding.
func (p phaseTimes) codec() time.Duration {
	return p[round.PhaseEncode] + p[round.PhaseDecode]
}

// combine is the time spent aggregating and in the outer step.
func (p phaseTimes) combine() time.Duration {
	return p[round.PhaseAggregate] + p[round.PhaseOuter]
}

// phaseMeter is one worker's round.Meter: the CPU time of the calling OS thread, which the
// caller locks (runtime.LockOSThread) around the Machine's methods. CPU time of the
// runtime's own threads (the garbage collector's background work) is in no phase.
type phaseMeter struct {
	t0    time.Duration
	spent phaseTimes
}

func (m *phaseMeter) Begin(round.Phase) { m.t0 = threadCPU() }
func (m *phaseMeter) End(p round.Phase) { m.spent[p] += threadCPU() - m.t0 }
func (m *phaseMeter) time(p round.Phase, fn func() error) error {
	m.Begin(p)
	defer m.End(p)
	return fn()
}

// simNet moves shards between the simulated workers' machines.
type simNet struct {
	ms     []*round.Machine
	meters []*phaseMeter
	starts [][]training.Tensor
	sent   int64
	final  []training.Tensor
	agree  bool
	codec  []CodecRound
	spent  phaseTimes
	check  func([]byte) (*compress.Message, error) // checks and decodes a shard
	merge  bool                                    // rounds close during the next round's work (round.Config.Merge)
	shifts [][]training.Tensor                     // per worker, the last closeDue's shift of its work (nil: none)
}

func (s *simNet) round(r uint64, locals [][]training.Tensor) error {
	W := len(s.ms)
	shards := make([][]compress.Shard, W)
	readies := make([]round.Ready, W)
	err := parallel(W, 2, func(w int) error {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		rd, err := s.ms[w].LocalDone(r, locals[w])
		readies[w] = rd
		if err == nil {
			shards[w] = rd.Send.Shards
		}
		return err
	})
	if err != nil {
		return err
	}
	if err := s.noteCodec(r, shards[0]); err != nil {
		return err
	}
	for w, rd := range readies {
		for _, sh := range shards[w] {
			s.sent += int64(len(sh.Data))
		}
		if rd.Start != nil {
			s.starts[w] = rd.Start.Params
		}
	}
	if err := parallel(W, 2, func(w int) error { return s.deliver(r, w, shards) }); err != nil {
		return err
	}
	if s.merge {
		return nil // round r closes during the next round's work
	}
	return s.closeDue()
}

// deliver hands every other worker's round-r shards to worker w, senders in random order.
// Parsing and joining the shards counts as decoding.
func (s *simNet) deliver(r uint64, w int, shards [][]compress.Shard) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	order := rand.New(rand.NewPCG(uint64(w), r)).Perm(len(shards))
	for _, v := range order {
		if v == w {
			continue
		}
		var msg *compress.Message
		err := s.meters[w].time(round.PhaseDecode, func() error {
			parts := make([]*compress.Message, len(shards[v]))
			for i, sh := range shards[v] {
				p, err := s.check(sh.Data)
				if err != nil {
					return fmt.Errorf("worker %d decoding a shard of %d: %w", w, v, err)
				}
				parts[i] = p
			}
			var err error
			msg, err = compress.Join(parts)
			return err
		})
		if err != nil {
			return err
		}
		if err := s.ms[w].Receive(round.Contribution{Round: r, Peer: peerID(v), Weight: 1, Msg: msg}); err != nil {
			return err
		}
	}
	return nil
}

// closeDue closes every round each machine may close now, two machines at a time.
func (s *simNet) closeDue() error {
	W := len(s.ms)
	closed := make([][]training.Tensor, W)
	s.shifts = make([][]training.Tensor, W)
	err := parallel(W, 2, func(w int) error {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for {
			next, ok := s.ms[w].Closable()
			if !ok {
				return nil
			}
			rd, err := s.ms[w].Close(next)
			if err != nil {
				return err
			}
			if len(rd.Closed.Included) != W {
				return fmt.Errorf("worker %d closed round %d with %d contributions, want %d", w, next, len(rd.Closed.Included), W)
			}
			closed[w] = rd.Closed.Params
			if rd.Shift != nil {
				s.shifts[w] = rd.Shift
			}
			if rd.Start != nil {
				s.starts[w] = rd.Start.Params
			}
		}
	})
	if err != nil || closed[0] == nil {
		return err
	}
	s.final = closed[0]
	ref := tensorBytes(closed[0])
	for _, c := range closed[1:] {
		if !bytes.Equal(ref, tensorBytes(c)) {
			s.agree = false
		}
	}
	return nil
}

// tensorBytes is the exact bit pattern of the tensors' values.
func tensorBytes(ts []training.Tensor) []byte {
	var b bytes.Buffer
	for _, t := range ts {
		for _, v := range t.Data {
			var x [8]byte
			u := math.Float64bits(v)
			for i := range x {
				x[i] = byte(u >> (8 * i))
			}
			b.Write(x[:])
		}
	}
	return b.Bytes()
}

// byteBudget is the payload budget that makes one round's message about ratio times
// smaller than the dense fp32 pseudo-gradient of ts.
func byteBudget(ts []training.Tensor, ratio float64) int {
	shapes := make(map[string][]int, len(ts))
	for _, t := range ts {
		shapes[t.Name] = t.Shape
	}
	return compress.RatioBudget(shapes, ratio)
}

// CodecRound is worker 0's codec statistics after encoding one round.
type CodecRound struct {
	Round   uint64        `json:"round"`
	Tensors []CodecTensor `json:"tensors"`
	// Codes2 counts the message's 2-bit factor codes by level (−3, −1, 1, 3), and
	// CodeEntropy is their empirical entropy in bits per code (--factor-bits 2): what a
	// coder with one frequency table per message would need, against 2 bits.
	Codes2      []int   `json:"codes_2bit,omitempty"`
	CodeEntropy float64 `json:"code_entropy,omitempty"`
	// The message's payload by kind: low-rank factors' codes and scales, the other
	// pieces (of which sparse indices).
	FactorCodeBytes  int `json:"factor_code_bytes"`
	FactorScaleBytes int `json:"factor_scale_bytes"`
	DenseBytes       int `json:"dense_bytes"`
	IndexBytes       int `json:"index_bytes,omitempty"`
}

// CodecTensor is one tensor's encoding in a round.
type CodecTensor struct {
	Name string `json:"name"`
	Rank int    `json:"rank"` // 0: sent dense
	// SharedRank is the number of coordinates on the shared basis (--shared-rank).
	SharedRank int     `json:"shared_rank,omitempty"`
	Captured   float64 `json:"captured_energy"`
	Residual   float64 `json:"residual_norm"`
	Held       bool    `json:"held,omitempty"` // not due this round (--dense-every): left out of the message
	Input      float64 `json:"input_norm"`     // ‖delta + decayed residual‖, of which captured_energy is the share sent
}

// capturedEnergy is the share of the whole model's input energy (Σ‖x‖² over the tensors)
// that the messages carried, 1 − Σ‖residual‖² / Σ‖x‖², averaged over the rounds.
func capturedEnergy(rs []CodecRound) float64 {
	var sum float64
	n := 0
	for _, r := range rs {
		var in, res float64
		for _, t := range r.Tensors {
			in += t.Input * t.Input
			res += t.Residual * t.Residual
		}
		if in > 0 {
			sum += 1 - res/in
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// noteCodec notes worker 0's codec statistics of round r, whose message it sent as shards.
func (s *simNet) noteCodec(r uint64, shards []compress.Shard) error {
	cr := CodecRound{Round: r}
	for _, t := range s.ms[0].CodecStats() {
		cr.Tensors = append(cr.Tensors, CodecTensor{Name: t.Name, Rank: t.Rank, SharedRank: t.SharedRank, Captured: t.Captured, Residual: t.Residual, Held: t.Held, Input: math.Sqrt(t.Input)})
	}
	var cs compress.CodeStats
	for _, sh := range shards {
		m, err := s.check(sh.Data)
		if err != nil {
			return fmt.Errorf("worker 0's own shard of round %d: %w", r, err)
		}
		cs.Add(m.CodeStats())
	}
	if h, ok := entropy(cs.Codes2[:]); ok {
		cr.Codes2, cr.CodeEntropy = cs.Codes2[:], h
	}
	cr.FactorCodeBytes, cr.FactorScaleBytes, cr.DenseBytes, cr.IndexBytes = cs.FactorCodeBytes, cs.FactorScaleBytes, cs.DenseBytes, cs.IndexBytes
	s.codec = append(s.codec, cr)
	return nil
}

// entropy is the empirical entropy of counts in bits per item; false without any item.
func entropy(counts []int) (float64, bool) {
	n := 0
	for _, c := range counts {
		n += c
	}
	if n == 0 {
		return 0, false
	}
	var h float64
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / float64(n)
			h -= p * math.Log2(p)
		}
	}
	return h, true
}

// codeEntropy is the empirical entropy of the 2-bit factor codes of all the rounds
// together, in bits per code (0 without any).
func codeEntropy(rs []CodecRound) float64 {
	var sum [4]int
	for _, r := range rs {
		for i, c := range r.Codes2 {
			sum[i] += c
		}
	}
	h, _ := entropy(sum[:])
	return h
}
