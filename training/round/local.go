package round

import (
	"fmt"
	"math"
	"slices"

	"github.com/lowband/lowband/training/compress"
)

// LocalState is this node's part of the round state that no root covers: the codec's
// state (error-feedback residuals, warm starts, ranks) and what the eager start keeps (its
// own last pseudo-gradient and its share of the last close). A restart restores it with
// SetLocal so that the node goes on where it stopped; peers never see it.
type LocalState struct {
	Codec compress.EncoderState `cbor:"1,keyasint"`
	// Own is this node's pseudo-gradient of round OwnRound, not yet in θ (eager start
	// only; nil: none).
	Own      []float64 `cbor:"2,keyasint"`
	OwnRound uint64    `cbor:"3,keyasint"`
	Share    float64   `cbor:"4,keyasint"`
	// Sent is this node's message of round OwnRound as its receivers decode it (with Own,
	// and Config.StartSent only; nil: none).
	Sent []float64 `cbor:"5,keyasint,omitempty"`
}

// Local returns a copy of the machine's local state.
func (m *Machine) Local() LocalState {
	ls := LocalState{Codec: m.enc.State(), Share: m.share}
	if m.own != nil && m.nextLocal > 0 {
		// LocalDone keeps the pseudo-gradient of the work just done and moves on by one.
		ls.Own, ls.OwnRound, ls.Sent = slices.Clone(m.own), m.nextLocal-1, slices.Clone(m.sent)
	}
	return ls
}

// LocalShared is Local with the eager start's own pseudo-gradient shared, not copied: for a
// caller that reads it before the machine's next event.
func (m *Machine) LocalShared() LocalState {
	ls := LocalState{Codec: m.enc.State(), Share: m.share}
	if m.own != nil && m.nextLocal > 0 {
		ls.Own, ls.OwnRound, ls.Sent = m.own, m.nextLocal-1, m.sent
	}
	return ls
}

// SetLocal restores a local state, which it copies: the codec's, checked against the
// codec's configuration (compress.Encoder.SetState), and the eager start's, which is kept
// only when it is of the round before the next local work (after SkipLocal, usually not:
// a pseudo-gradient of a round already closed must not move the start). Call it before
// Start. On error nothing changes.
func (m *Machine) SetLocal(ls LocalState) error {
	if m.started {
		return fmt.Errorf("%w: local state set while local work is under way", ErrOrder)
	}
	if ls.Own != nil && len(ls.Own) != m.size || !allFinite(ls.Own) || !(ls.Share >= 0) || math.IsInf(ls.Share, 0) {
		return fmt.Errorf("%w: own pseudo-gradient of %d values for %d, share %v", ErrInvalid, len(ls.Own), m.size, ls.Share)
	}
	if ls.Sent != nil && (ls.Own == nil || len(ls.Sent) != m.size || !allFinite(ls.Sent)) {
		return fmt.Errorf("%w: own message of %d values for %d, with an own pseudo-gradient %v", ErrInvalid, len(ls.Sent), m.size, ls.Own != nil)
	}
	enc, err := compress.NewEncoder(m.cfg.Compress)
	if err != nil {
		return fmt.Errorf("round: %w", err)
	}
	if err := enc.SetState(ls.Codec); err != nil {
		return fmt.Errorf("round: %w", err)
	}
	m.enc, m.share, m.own, m.sent = enc, ls.Share, nil, nil
	if ls.Own != nil && m.cfg.StartPoint == StartEager && ls.OwnRound+1 == m.nextLocal && m.nextClose <= ls.OwnRound {
		m.own = slices.Clone(ls.Own)
		if m.cfg.StartSent > 0 {
			m.sent = slices.Clone(ls.Sent)
		}
	}
	return nil
}

// Abandon drops the local work under way: it is never reported (a LocalDone for its round
// is refused), nothing of the round state changes, and SkipLocal may then move the next
// local work past its round. A node whose peers closed that round already drops it: its
// contribution would reach them late and be left out. Refused with no local work under way.
func (m *Machine) Abandon() error {
	if !m.started {
		return fmt.Errorf("%w: no local work under way to abandon (next %d)", ErrOrder, m.nextLocal)
	}
	m.started, m.base = false, nil
	return nil
}

// SkipLocal makes first the round of the next local work: the rounds before it close
// without this node's contribution. A restart skips the rounds the node may have signed
// shards for before it stopped, since signing other shards for them would be equivocation;
// a node whose peers closed a round before its local work for it began or ended skips
// that round (Abandon). first is at most one round past what the delay lets start at
// once; the start then comes out of the close that allows it. Call it with no local work
// under way.
func (m *Machine) SkipLocal(first uint64) error {
	if m.started || first < m.nextLocal || first > m.nextClose+uint64(m.cfg.Delay)+1 {
		return fmt.Errorf("%w: skipping local work to round %d (local work at %d, closed up to %d)", ErrOrder, first, m.nextLocal, m.nextClose)
	}
	if first != m.nextLocal {
		m.nextLocal, m.own, m.sent = first, nil, nil
	}
	return nil
}

// Startable reports whether Start may be called now: no local work under way and the delay
// allows the next.
func (m *Machine) Startable() bool {
	return !m.started && !m.finished && m.nextClose+uint64(m.cfg.Delay) >= m.nextLocal
}

func allFinite(v []float64) bool {
	for _, x := range v {
		if x-x != 0 {
			return false
		}
	}
	return true
}
