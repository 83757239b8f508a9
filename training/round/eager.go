package round

import (
	"slices"

	"github.com/lowband/lowband/training/compress"
)

// Start points of local work (Config.StartPoint).
const (
	// StartGlobal starts local work from the global θ: with the one-step delay, θ_t, which
	// holds neither round t's aggregate nor this node's own progress in round t.
	StartGlobal = "global"
	// StartEager starts round t+1's local work from θ_t minus OuterLR·s·Δ_t, where Δ_t is
	// this node's own pseudo-gradient of round t, not yet aggregated, and s is its share of
	// the weight included in the last closed round (1/M for M equal peers): the eager
	// update of Kale et al. (2025). Needs Delay 1.
	StartEager = "eager"
)

func validStartPoint(cfg Config) bool {
	if !(cfg.StartMix >= 0 && cfg.StartMix <= 1) || cfg.StartMix > 0 && cfg.StartPoint != StartEager {
		return false
	}
	if !(cfg.StartResidual >= 0 && cfg.StartResidual <= 1) {
		return false
	}
	if !(cfg.StartSent >= 0 && cfg.StartSent <= 1) || cfg.StartSent > 0 && cfg.StartPoint != StartEager {
		return false
	}
	switch cfg.StartPoint {
	case "", StartGlobal:
		return true
	case StartEager:
		return cfg.Delay == 1
	}
	return false
}

// startPoint returns a new copy of the point the next local work starts from: θ, or with
// the eager start θ − c·own while this node's last pseudo-gradient is not yet in θ and a
// closed round has told the node its share, c being StartMix or else OuterLR·share; then,
// with StartResidual γ, less γ times the codec's residual. Every product is rounded before
// it is subtracted, like the outer step, though only this node ever uses the result.
func (m *Machine) startPoint() []float64 {
	base := slices.Clone(m.theta)
	m.subResidual(base)
	if m.cfg.StartPoint != StartEager || m.own == nil || m.nextClose >= m.nextLocal || !(m.share > 0) {
		return base
	}
	c := float64(m.cfg.OuterLR * m.share)
	if m.cfg.StartMix > 0 {
		c = m.cfg.StartMix
	}
	for i, d := range m.own {
		base[i] -= float64(c * d)
	}
	if s := m.cfg.StartSent; s > 0 && m.sent != nil {
		for i, d := range m.sent {
			base[i] -= float64(s * d)
		}
	}
	return base
}

// subResidual subtracts StartResidual times the codec's residual of every tensor from base
// (θ's layout). The residual does not change between a Start and its LocalDone, which
// makes the start point again: the encoder runs after it.
func (m *Machine) subResidual(base []float64) {
	g := m.cfg.StartResidual
	if !(g > 0) {
		return
	}
	for _, t := range m.like {
		off := m.offsets[t.Name]
		for j, v := range m.enc.Residual(t.Name) {
			base[off+j] -= float64(g * v)
		}
	}
}

// noteOwn keeps this node's pseudo-gradient of the local work just done, for the eager start.
// It keeps delta itself, which the caller no longer writes.
func (m *Machine) noteOwn(delta []float64, sent []float64) {
	if m.cfg.StartPoint == StartEager {
		m.own, m.sent = delta, sent
	}
}

// decodeOwn is this node's message of round r as its receivers decode it, for StartSent
// (nil without it).
func (m *Machine) decodeOwn(r uint64, msg *compress.Message) ([]float64, error) {
	if !(m.cfg.StartSent > 0) || m.cfg.StartPoint != StartEager {
		return nil, nil
	}
	v := make([]float64, m.size)
	ts := make([]compress.Tensor, len(m.like))
	for i, t := range m.views(v) {
		ts[i] = compress.Tensor(t)
	}
	if err := msg.DecodeDue(ts, m.cfg.Compress.Due(r, m.shapeList())); err != nil {
		return nil, err
	}
	return v, nil
}

// noteShare records this node's share of the total weight included in a closed round.
func (m *Machine) noteShare(total float64) {
	if total > 0 {
		m.share = m.cfg.Weight / total
	}
}
