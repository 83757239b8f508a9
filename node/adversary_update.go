package node

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/round"
)

// StatisticalKinds are the adversary kinds that change only the pseudo-gradient sent.
var StatisticalKinds = AdversaryKinds[:7]

// AdversaryUpdater is a statistical adversary without a node: `bench train --adversaries`
// makes workers of the round machines misbehave with it. Not safe for concurrent use.
type AdversaryUpdater struct{ a adversary }

// NewAdversaryUpdater returns the updater of a statistical kind for the peer named self.
func NewAdversaryUpdater(kind, self string) (*AdversaryUpdater, error) {
	if !slices.Contains(StatisticalKinds, kind) {
		return nil, fmt.Errorf("adversary %q is not one of the statistical kinds %v", kind, StatisticalKinds)
	}
	return &AdversaryUpdater{a: adversary{kind: kind, self: self}}, nil
}

// Update returns the parameters the adversary hands its round machine after the work of
// round r moved base to local: base − Δ'.
func (u *AdversaryUpdater) Update(r uint64, base, local []training.Tensor) ([]training.Tensor, error) {
	return u.a.update(round.Start{Round: r, Params: base}, local)
}

// Constants of the statistical kinds.
const (
	scaledFactor = 100 // scaled: Δ' = 100·Δ
	alieZ        = 1.0 // alie: how many standard deviations below the mean
	ipmEpsilon   = 0.5 // ipm: Δ' = −ε·μ
)

// pseudoGradient is the pseudo-gradient a statistical adversary sends for round r in
// place of its own, delta; false for the kinds that send their own. It keeps the node's
// last pseudo-gradients for alie, ipm and stale.
//
// alie and ipm would read the honest contributions of the round; the node does not hand
// them out of its core, so they estimate the honest mean μ and spread σ per coordinate
// from the node's own last seenRounds pseudo-gradients (its own work stands in for its
// peers').
func (a *adversary) pseudoGradient(r uint64, delta []float64) ([]float64, bool) {
	switch a.kind {
	case AdvSignFlip:
		return scaled(delta, -1), true
	case AdvScaled:
		return scaled(delta, scaledFactor), true
	case AdvNoise:
		return noise(delta, noiseSeed(a.self, r)), true
	case AdvFreeRide:
		return make([]float64, len(delta)), true
	case AdvALIE, AdvIPM, AdvStale:
	default:
		return nil, false
	}
	a.seen = append(a.seen, delta)
	keep := seenRounds
	if a.kind == AdvStale {
		keep = staleRounds + 1
	}
	if len(a.seen) > keep {
		a.seen = a.seen[len(a.seen)-keep:]
	}
	switch a.kind {
	case AdvStale:
		return a.seen[0], true // staleRounds rounds old once it has them
	case AdvIPM:
		mu, _ := meanStd(a.seen)
		return scaled(mu, -ipmEpsilon), true
	}
	mu, sd := meanStd(a.seen)
	out := make([]float64, len(mu))
	for i := range mu {
		out[i] = mu[i] - alieZ*sd[i]
	}
	return out, true
}

func scaled(v []float64, k float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = k * x
	}
	return out
}

// noise returns Gaussian noise with the L2 norm of v.
func noise(v []float64, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 0x6e6f697365))
	out := make([]float64, len(v))
	var nv, ng float64
	for i := range out {
		out[i] = rng.NormFloat64()
		ng += out[i] * out[i]
		nv += v[i] * v[i]
	}
	if ng == 0 {
		return out
	}
	return scaled(out, math.Sqrt(nv)/math.Sqrt(ng))
}

// noiseSeed is the noise's seed for a peer's round: reproducible, different each round.
func noiseSeed(self string, r uint64) uint64 {
	h := sha256.New()
	h.Write([]byte(self))
	_ = binary.Write(h, binary.BigEndian, r)
	return binary.BigEndian.Uint64(h.Sum(nil))
}

// meanStd returns the per-coordinate mean and (population) standard deviation of vs.
func meanStd(vs [][]float64) (mu, sd []float64) {
	n := float64(len(vs))
	mu, sd = make([]float64, len(vs[0])), make([]float64, len(vs[0]))
	for _, v := range vs {
		for i, x := range v {
			mu[i] += x / n
		}
	}
	for _, v := range vs {
		for i, x := range v {
			d := x - mu[i]
			sd[i] += d * d / n
		}
	}
	for i := range sd {
		sd[i] = math.Sqrt(sd[i])
	}
	return mu, sd
}
