package round

import (
	"fmt"
	"math"
	"slices"

	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/compress"
)

// New returns a Machine that resumes from st. It copies st.
func New(cfg Config, st State) (*Machine, error) {
	if cfg.Self == "" || !(cfg.Weight > 0) || math.IsInf(cfg.Weight, 0) {
		return nil, fmt.Errorf("round: config needs a peer ID and a positive weight (%q, %v)", cfg.Self, cfg.Weight)
	}
	if cfg.Delay != 0 && cfg.Delay != 1 {
		return nil, fmt.Errorf("round: delay %d (want 0 or 1)", cfg.Delay)
	}
	if !(cfg.OuterLR > 0) || !(cfg.Momentum >= 0 && cfg.Momentum < 1) {
		return nil, fmt.Errorf("round: outer lr %v, momentum %v", cfg.OuterLR, cfg.Momentum)
	}
	if !validStartPoint(cfg) {
		return nil, fmt.Errorf("round: start point %q with delay %d, mix %v and residual weight %v (want %q, or %q with delay 1 and a mix in [0, 1]; a residual weight in [0, 1])", cfg.StartPoint, cfg.Delay, cfg.StartMix, cfg.StartResidual, StartGlobal, StartEager)
	}
	if cfg.Merge && cfg.Delay != 1 {
		return nil, fmt.Errorf("round: merging a close into the local work under way needs delay 1 (delay %d)", cfg.Delay)
	}
	if cfg.Compress.SharedRank > 0 && cfg.Delay != 0 {
		return nil, fmt.Errorf("round: shared bases (compression shared rank %d) need delay 0", cfg.Compress.SharedRank)
	}
	if cfg.Window == 0 {
		cfg.Window = 1
	}
	if cfg.MaxNorm == 0 {
		cfg.MaxNorm = math.Inf(1)
	}
	enc, err := compress.NewEncoder(cfg.Compress)
	if err != nil {
		return nil, fmt.Errorf("round: %w", err)
	}
	lay, err := newLayout(st.Params)
	if err != nil {
		return nil, err
	}
	m := &Machine{
		cfg: cfg, enc: enc, layout: lay,
		theta:     training.Flatten(st.Params),
		outer:     outerOf(cfg),
		nextClose: st.Round, nextLocal: st.Round,
		contrib: map[uint64]map[string]Contribution{},
	}
	if st.Momentum != nil {
		if len(st.Momentum) != len(m.theta) {
			return nil, fmt.Errorf("round: momentum of %d values for %d parameters", len(st.Momentum), len(m.theta))
		}
		if err := keepsMomentum(cfg); err != nil {
			return nil, err
		}
		m.outer.SetMomentumBuffer(st.Momentum)
	}
	return m, nil
}

// params returns a copy of θ as tensors.
func (m *Machine) params() []training.Tensor {
	return m.tensors(m.theta)
}

// State returns what a restart needs: the first open round, θ and the outer momentum.
// Contributions of open rounds, the codec's error feedback and what the eager start keeps
// are not part of it (see Local).
func (m *Machine) State() State {
	return State{Round: m.nextClose, Params: m.params(), Momentum: slices.Clone(m.outer.MomentumBuffer())}
}

// Snapshot is State for a caller that keeps it and never modifies it: it shares θ and the
// momentum with the machine, which never writes them in place (a close steps copies of
// them, a Reset takes copies of its state), so it stays what it was.
func (m *Machine) Snapshot() State {
	return State{Round: m.nextClose, Params: m.views(m.theta), Momentum: m.outer.MomentumBuffer()}
}

// Root is State().Root() without copying θ and the momentum.
func (m *Machine) Root() [32]byte {
	return State{Round: m.nextClose, Params: m.views(m.theta), Momentum: m.outer.MomentumBuffer()}.Root()
}

// Start starts the next local work and returns it. It is the first call after New; later
// starts come out of LocalDone and Close. It fails if local work is already under way or
// the delay requires a round to be closed first.
func (m *Machine) Start() (Start, error) {
	if m.started || m.finished || m.nextClose+uint64(m.cfg.Delay) < m.nextLocal {
		return Start{}, fmt.Errorf("%w: cannot start round %d (closed up to %d)", ErrOrder, m.nextLocal, m.nextClose)
	}
	m.started = true
	// The start point is made again at LocalDone (the same bits: nothing it depends on
	// changes before then, and a Reset keeps it first), not kept while the work runs.
	return Start{Round: m.nextLocal, Params: m.views(m.startPoint())}, nil
}

// maybeStart starts the next local work when the delay allows it.
func (m *Machine) maybeStart(rd *Ready) {
	if !m.started && !m.finished && m.nextClose+uint64(m.cfg.Delay) >= m.nextLocal {
		s, _ := m.Start()
		rd.Start = &s
	}
}

// LocalDone reports that local work for round r ended with the parameters local. The
// pseudo-gradient (start minus local) is compressed into Ready.Send, and recorded as this
// node's own contribution for round r. Ready.Start is set when the next local work may begin
// at once; with the one-step delay that happens after closing round r-1.
func (m *Machine) LocalDone(r uint64, local []training.Tensor) (Ready, error) {
	if !m.started || r != m.nextLocal {
		return Ready{}, fmt.Errorf("%w: local work done for round %d, expected %d", ErrOrder, r, m.nextLocal)
	}
	if err := m.fits(State{Params: local}); err != nil {
		return Ready{}, fmt.Errorf("round: local parameters: %w: %w", training.ErrShape, err)
	}
	// The pseudo-gradient, start minus local, as one vector; the encoder reads it through
	// views and the eager start keeps it.
	delta := slices.Clone(m.base) // kept as it is, should the encoding fail
	if delta == nil {
		delta = m.startPoint()
	}
	off := 0
	for _, t := range local {
		for j, v := range t.Data {
			delta[off+j] -= v
		}
		off += len(t.Data)
	}
	ts := make([]compress.Tensor, len(m.like))
	for i, t := range m.views(delta) {
		ts[i] = compress.Tensor(t)
	}
	m.begin(PhaseEncode)
	bases, err := m.sharedBases()
	var msg *compress.Message
	if err == nil {
		msg, err = m.enc.EncodeRoundShared(r, ts, bases)
	}
	var shards []compress.Shard
	if err == nil {
		shards, err = msg.Shards()
	}
	var sent []float64
	if err == nil {
		sent, err = m.decodeOwn(r, msg)
	}
	m.end(PhaseEncode)
	if err != nil {
		return Ready{}, fmt.Errorf("round: compressing round %d: %w", r, err)
	}
	m.store(Contribution{Round: r, Peer: m.cfg.Self, Weight: m.cfg.Weight, Msg: msg})
	m.noteOwn(delta, sent)
	m.nextLocal, m.started, m.base = r+1, false, nil
	rd := Ready{Send: &Outbound{Round: r, Msg: msg, Shards: shards}}
	m.maybeStart(&rd)
	return rd, nil
}

func (m *Machine) store(c Contribution) {
	if m.contrib[c.Round] == nil {
		m.contrib[c.Round] = map[string]Contribution{}
	}
	m.contrib[c.Round][c.Peer] = c
}

// Receive records a peer's contribution. The caller has verified its signature and
// attestation and run the content checks on its shards (compress.CheckShard); Receive checks
// the round window, duplicates, the weight and that the message is whole, and does not
// repeat the content checks (they cost a full decode). A contribution that nevertheless
// fails to decode into the model's tensors, or exceeds Config.MaxNorm, is left out at Close
// and listed in Closed.Rejected: deterministically, since every node decodes the same
// bytes. Errors wrap ErrClosed, ErrFuture, ErrDuplicate or ErrInvalid; nothing is recorded
// on error.
func (m *Machine) Receive(c Contribution) error {
	switch {
	case c.Round < m.nextClose:
		return fmt.Errorf("%w: contribution for round %d, next open round is %d", ErrClosed, c.Round, m.nextClose)
	case c.Round > m.nextLocal+m.cfg.Window:
		return fmt.Errorf("%w: contribution for round %d, local work is at round %d", ErrFuture, c.Round, m.nextLocal)
	case c.Peer == "" || c.Msg == nil:
		return fmt.Errorf("%w: missing peer or message", ErrInvalid)
	case !(c.Weight > 0) || math.IsInf(c.Weight, 0):
		return fmt.Errorf("%w: weight %v", ErrInvalid, c.Weight)
	}
	if _, dup := m.contrib[c.Round][c.Peer]; dup {
		return fmt.Errorf("%w: peer %s, round %d", ErrDuplicate, c.Peer, c.Round)
	}
	if _, n := c.Msg.Part(); n != 1 {
		return fmt.Errorf("%w: message is one of %d shards, not a whole contribution", ErrInvalid, n)
	}
	m.store(c)
	return nil
}

// Finish tells the machine no more local work will be done (local work under way is
// abandoned), so that the remaining rounds may be closed without waiting for it.
func (m *Machine) Finish() { m.finished, m.started, m.base = true, false, nil }

// Closable returns the next round that may be closed now, if any.
func (m *Machine) Closable() (uint64, bool) {
	due := m.nextClose + uint64(m.cfg.Delay)
	if m.finished {
		due = m.nextClose
	}
	return m.nextClose, m.nextLocal > due || m.merging()
}

// Merging reports whether the next round to close is closable only because Config.Merge
// lets it close during the local work under way: without it, that round would wait for the
// work to end.
func (m *Machine) Merging() bool { return m.merging() }

// merging reports whether the next round to close is the one before the local work under
// way, which Config.Merge lets close during that work.
func (m *Machine) merging() bool {
	return m.cfg.Merge && m.cfg.Delay == 1 && m.started && !m.finished && m.nextLocal == m.nextClose+1
}

// Pending returns the peer IDs (sorted) whose contributions are held for round r.
func (m *Machine) Pending(r uint64) []string {
	ids := make([]string, 0, len(m.contrib[r]))
	for id := range m.contrib[r] {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Close closes round r: the contributions held for it, in sorted peer order, are decoded,
// aggregated with their weights and applied to θ by the outer optimizer. r must be the round
// Closable returns. Ready.Closed carries the inclusion list and the new θ; Ready.Start the
// next local work, if it was waiting for this round.
func (m *Machine) Close(r uint64) (Ready, error) {
	return m.close(r, func(c Contribution) float64 { return c.Weight })
}

// CloseWith closes round r like Close, but aggregates only the held contributions whose peer
// has a weight > 0 (and finite) in weights, with that weight instead of the one they came
// with; this node's own contribution is treated the same way. The others are dropped: they
// are in neither Closed.Included nor Closed.Rejected. The caller decides the weights (from
// the ledger in force when the round closes) and must give every node the same map for the
// same bytes of θ.
func (m *Machine) CloseWith(r uint64, weights map[string]float64) (Ready, error) {
	return m.close(r, weightOf(weights))
}

func (m *Machine) close(r uint64, weight func(Contribution) float64) (Ready, error) {
	if next, ok := m.Closable(); !ok || r != next {
		return Ready{}, fmt.Errorf("%w: cannot close round %d (next %d, local work at %d)", ErrOrder, r, m.nextClose, m.nextLocal)
	}
	cs := make([]Contribution, 0, len(m.contrib[r]))
	for _, id := range m.Pending(r) {
		cs = append(cs, m.contrib[r][id])
	}
	// The step writes copies of θ and the momentum: Snapshot and Closed share the ones it
	// replaces.
	var oldBase []float64 // the base of the work under way, which a merging close moves
	if m.merging() {
		if oldBase = m.base; oldBase == nil {
			oldBase = m.startPoint()
		}
	}
	theta, outer := slices.Clone(m.theta), m.outer
	outer.SetMomentumBuffer(m.outer.MomentumBuffer())
	var bases compress.Bases
	var err error
	if m.cfg.Compress.SharedRank > 0 {
		m.begin(PhaseDecode)
		bases, err = m.sharedBases()
		m.end(PhaseDecode)
		if err != nil {
			return Ready{}, err
		}
	}
	total, included, rejected, dropped, err := closeStep(m.cfg, &m.layout, theta, &outer, r, cs, weight, bases)
	if err != nil {
		return Ready{}, err
	}
	m.theta, m.outer, m.bases = theta, outer, nil
	m.noteShare(total)
	delete(m.contrib, r)
	m.nextClose = r + 1
	rd := Ready{Closed: &Closed{Round: r, Included: included, Rejected: rejected, Dropped: dropped, Params: m.views(m.theta)}}
	if oldBase != nil {
		m.base = m.startPoint() // round r is in θ now: no eager term
		shift := make([]float64, len(oldBase))
		for i, v := range m.base {
			shift[i] = v - oldBase[i]
		}
		rd.Shift = m.views(shift)
	}
	m.maybeStart(&rd)
	return rd, nil
}

// CodecStats describes the last encoding of each of this node's tensors: rank, captured
// energy and residual norm (see compress.TensorStats).
func (m *Machine) CodecStats() []compress.TensorStats { return m.enc.Stats() }

// Reset replaces the machine's global state (θ, the outer momentum, the first open round)
// by st, whose tensors must have the model's names and shapes. It keeps the local state:
// the codec's residuals and warm starts, local work in progress and its base, the eager
// start's own pseudo-gradient, and the contributions held for rounds >= st.Round (those of
// earlier rounds are dropped). Local work of a round before st.Round is abandoned: the next
// Start is for st.Round. The node calls it after repairing closed rounds with Step; it
// copies st.
func (m *Machine) Reset(st State) error {
	if err := m.layout.fits(st); err != nil {
		return err
	}
	if st.Momentum != nil {
		if err := keepsMomentum(m.cfg); err != nil {
			return err
		}
	}
	if m.started && m.base == nil { // the start point of the work under way, before θ changes
		m.base = m.startPoint()
	}
	m.theta = training.Flatten(st.Params)
	m.outer.SetMomentumBuffer(st.Momentum)
	m.bases = nil
	if st.Momentum == nil {
		m.outer = outerOf(m.cfg)
	}
	m.nextClose = st.Round
	if m.nextLocal < st.Round {
		m.nextLocal, m.started, m.base = st.Round, false, nil
	}
	for r := range m.contrib {
		if r < st.Round {
			delete(m.contrib, r)
		}
	}
	return nil
}

// sharedBases returns the shared bases of the next round to close (sharedBases of the
// momentum), derived once per closed state: with delay 0 the round of the local work
// just done.
func (m *Machine) sharedBases() (compress.Bases, error) {
	if m.cfg.Compress.SharedRank == 0 {
		return nil, nil
	}
	if m.bases == nil {
		b, err := sharedBases(m.cfg, &m.layout, m.outer.MomentumBuffer())
		if err != nil {
			return nil, err
		}
		m.bases = &b
	}
	return *m.bases, nil
}
