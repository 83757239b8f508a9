package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/round"
)

// workers holds the simulated nodes' models, inner loops and data.
type workers struct {
	models  []training.Model
	inners  []*training.Inner
	batches []*training.Batcher
}

func newWorkers(opt TrainOptions, tk *task) (*workers, error) {
	parts, err := workerSlices(tk.pool, opt.Seed, opt.Workers)
	if err != nil {
		return nil, err
	}
	return newWorkersOn(opt, tk, parts)
}

// newWorkersOn builds opt.Workers workers, worker w on the samples parts[w] of tk.train.
func newWorkersOn(opt TrainOptions, tk *task, parts [][]int) (*workers, error) {
	ws := &workers{}
	sched := training.Schedule{Peak: opt.InnerLR, Min: opt.MinLR, Warmup: opt.Warmup, Total: opt.Rounds * opt.H}
	if opt.TotalSteps > 0 {
		sched.Total = opt.TotalSteps
	}
	for w := 0; w < opt.Workers; w++ {
		m, err := tk.newModel(opt.Seed)
		if err != nil {
			return nil, err
		}
		b, err := training.NewBatcher(tk.train, parts[w], opt.Batch, opt.Seed*1000+uint64(w))
		if err != nil {
			return nil, err
		}
		ws.models = append(ws.models, m)
		ws.inners = append(ws.inners, &training.Inner{Model: m, Opt: training.NewAdamW(opt.WeightDecay), Schedule: sched, Clip: opt.Clip})
		ws.batches = append(ws.batches, b)
	}
	return ws, nil
}

// parallel runs fn(0..n-1) on at most limit goroutines and returns the first error.
func parallel(n, limit int, fn func(i int) error) error {
	errs := make([]error, n)
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			errs[i] = fn(i)
			<-sem
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func runMode(ctx context.Context, name string, opt TrainOptions, tk *task) (*ModeResult, error) {
	ws, err := newWorkers(opt, tk)
	if err != nil {
		return nil, err
	}
	theta0 := training.Snapshot(ws.models[0].Params())
	dense := float64(4 * training.NumParams(ws.models[0].Params()))
	mr := &ModeResult{Name: name, Agree: true}
	start, cpu0 := time.Now(), cpuTime()
	var final []training.Tensor
	var pt phaseTimes
	switch name {
	case ModeAllReduce:
		final, err = runAllReduce(ctx, opt, ws)
		mr.BytesPerRound = dense * float64(opt.H)
	case ModeDiLoCo:
		final, pt[round.PhaseAggregate], err = runDiLoCo(ctx, opt, ws, theta0)
		mr.BytesPerRound = dense
	case ModeCompress, ModeCompressDelay:
		delay := 0
		if name == ModeCompressDelay {
			delay = 1
		}
		var sim *simNet
		if sim, err = runMachines(ctx, opt, ws, theta0, delay); err == nil {
			final, pt, mr.Agree, mr.Codec = sim.final, sim.spent, sim.agree, sim.codec
			mr.CapturedEnergy, mr.CodeEntropy = capturedEnergy(sim.codec), codeEntropy(sim.codec)
			mr.BytesPerRound = float64(sim.sent) / float64(opt.Workers*opt.Rounds)
		}
	default:
		return nil, fmt.Errorf("unknown mode %q (want one of %v)", name, TrainModes)
	}
	if err != nil {
		return nil, err
	}
	wall, cpu := time.Since(start), cpuTime()-cpu0
	mr.Seconds = wall.Seconds()
	mr.BytesTotal = mr.BytesPerRound * float64(opt.Workers*opt.Rounds)
	mr.CompressionRatio = dense / mr.BytesPerRound
	mr.CompressShare = pt.codec().Seconds() / cpu.Seconds()
	mr.AggregateShare = pt.combine().Seconds() / cpu.Seconds()
	mr.TokensPerS = float64(opt.Workers*opt.Rounds*opt.H*opt.Batch) / wall.Seconds()
	if mr.ValLoss, _, err = evaluate(ws.models[0], final, tk.val); err != nil {
		return nil, err
	}
	loss, acc, err := evaluate(ws.models[0], final, tk.test)
	if err != nil {
		return nil, err
	}
	mr.TestLoss = loss
	if tk.accuracy {
		mr.TestAcc = &acc
	}
	return mr, nil
}

// evaluate loads theta into m and returns the mean loss and accuracy on b, in chunks.
func evaluate(m training.Model, theta []training.Tensor, b training.Batch) (float64, float64, error) {
	if err := training.Load(m.Params(), theta); err != nil {
		return 0, 0, err
	}
	const chunk = 512
	var loss, acc float64
	for lo := 0; lo < b.N; lo += chunk {
		hi := min(lo+chunk, b.N)
		part := training.Batch{N: hi - lo, Y: b.Y[lo:hi]}
		if b.Tokens != nil {
			w := len(b.Tokens) / b.N
			part.Tokens = b.Tokens[lo*w : hi*w]
		} else {
			w := len(b.X) / b.N
			part.X = b.X[lo*w : hi*w]
		}
		l, a, err := m.Eval(part)
		if err != nil {
			return 0, 0, err
		}
		loss += l * float64(part.N)
		acc += a * float64(part.N)
	}
	return loss / float64(b.N), acc / float64(b.N), nil
}

// runAllReduce is synchronous data parallelism: every step, each worker computes a gradient
// on its own batch at the shared parameters; the gradients are averaged (in worker order)
// and one AdamW step is taken.
func runAllReduce(ctx context.Context, opt TrainOptions, ws *workers) ([]training.Tensor, error) {
	master := ws.models[0].Params()
	for _, m := range ws.models[1:] { // workers read the master's parameter values
		for i, p := range m.Params() {
			p.Data = master[i].Data
		}
	}
	inner := ws.inners[0]
	W := float64(opt.Workers)
	for step := 0; step < opt.Rounds*opt.H; step++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		err := parallel(opt.Workers, opt.Workers, func(w int) error {
			_, err := ws.models[w].LossGrad(ws.batches[w].Next())
			return err
		})
		if err != nil {
			return nil, err
		}
		for i, p := range master {
			for _, m := range ws.models[1:] {
				g := m.Params()[i].Grad
				for j := range p.Grad {
					p.Grad[j] += g[j]
				}
			}
			for j := range p.Grad {
				p.Grad[j] /= W
			}
		}
		training.ClipGradNorm(master, opt.Clip)
		inner.Opt.Step(master, inner.Schedule.At(step))
	}
	return training.Snapshot(master), nil
}

// localPhase loads each worker's start parameters and runs H inner steps in parallel.
func localPhase(opt TrainOptions, ws *workers, starts [][]training.Tensor) ([][]training.Tensor, error) {
	return localSteps(opt, ws, starts, opt.H)
}

// localSteps runs steps inner steps on every worker, from starts (nil: from where each
// worker's model is), and returns the parameters they end with.
func localSteps(opt TrainOptions, ws *workers, starts [][]training.Tensor, steps int) ([][]training.Tensor, error) {
	out := make([][]training.Tensor, opt.Workers)
	err := parallel(opt.Workers, opt.Workers, func(w int) error {
		if starts != nil {
			if err := training.Load(ws.models[w].Params(), starts[w]); err != nil {
				return err
			}
		}
		if _, err := ws.inners[w].Run(ws.batches[w], steps); err != nil {
			return err
		}
		out[w] = training.Snapshot(ws.models[w].Params())
		return nil
	})
	return out, err
}

// runDiLoCo is DiLoCo with dense pseudo-gradients averaged in worker order. It returns the
// final θ and the CPU time spent forming and averaging the pseudo-gradients and in the outer
// step.
func runDiLoCo(ctx context.Context, opt TrainOptions, ws *workers, theta0 []training.Tensor) ([]training.Tensor, time.Duration, error) {
	theta := training.Flatten(theta0)
	outer := &training.Nesterov{LR: opt.OuterLR, Momentum: opt.Momentum}
	var codec time.Duration
	for r := 0; r < opt.Rounds; r++ {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		global, _ := training.Unflatten(theta, theta0)
		starts := make([][]training.Tensor, opt.Workers)
		for w := range starts {
			starts[w] = global
		}
		locals, err := localPhase(opt, ws, starts)
		if err != nil {
			return nil, 0, err
		}
		t0 := cpuTime()
		mean := make([]float64, len(theta))
		for _, local := range locals {
			delta, err := training.PseudoGradient(global, local)
			if err != nil {
				return nil, 0, err
			}
			for i, v := range training.Flatten(delta) {
				mean[i] += v
			}
		}
		for i := range mean {
			mean[i] /= float64(opt.Workers)
		}
		if err := outer.Step(theta, mean); err != nil {
			return nil, 0, err
		}
		codec += cpuTime() - t0
	}
	final, _ := training.Unflatten(theta, theta0)
	return final, codec, nil
}

// peerID names simulated worker w.
func peerID(w int) string { return "worker-" + strconv.Itoa(w) }
