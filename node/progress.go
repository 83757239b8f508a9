package node

import (
	"encoding/hex"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// maxRounds is how many closed rounds GET /status keeps.
const maxRounds = 1000

// RoundStatus is one closed round in GET /status and in the node's log line.
type RoundStatus struct {
	Round             uint64         `json:"round"`
	Loss              *float64       `json:"loss"` // held-out loss of θ after the close; null until scored
	Included          []string       `json:"included"`
	Filtered          []string       `json:"filtered,omitempty"` // of Included, left out whole by the aggregation rule (they earn nothing)
	Rejected          map[string]int `json:"rejected"`
	Evidence          int            `json:"evidence"`
	ContributionBytes int            `json:"contribution_bytes"`
	WireBytesSent     int64          `json:"wire_bytes_sent"`     // during the round, all protocols
	WireBytesReceived int64          `json:"wire_bytes_received"` // during the round, all protocols
	StallS            float64        `json:"stall_s"`
	HeldS             float64        `json:"held_s"` // closable by its deadline rule, the round waited this long for the records of the round leaving the repair window
	DeadlineS         float64        `json:"deadline_s"`
	Ranks             []int          `json:"ranks"`
	StateRoot         string         `json:"state_root"`
	LedgerRoot        string         `json:"ledger_root"`
	ClosedAt          string         `json:"closed_at"` // RFC 3339, to the millisecond
	// SentAt is when this node handed its contribution to the round to gossip, encoded
	// and signed, as ClosedAt; empty without one (or for a round a restart closed).
	SentAt string `json:"sent_at,omitempty"`
	// Repaired: the round was closed again with its canonical inclusion list; Included,
	// Evidence and the roots are the repaired round's, the loss that of the first close.
	Repaired bool `json:"repaired,omitempty"`
	// CaughtUp: the node did not close the round itself; a catch-up (restart or resync)
	// closed it again from its peers' committed record, so it has no loss, bytes or stall
	// of its own.
	CaughtUp bool `json:"caught_up,omitempty"`
}

// TrainingStatus is the "training" object of GET /status (absent on a bootstrap node).
type TrainingStatus struct {
	Task               string        `json:"task"`
	Attestation        string        `json:"attestation"`
	Insecure           bool          `json:"insecure"`
	NextRound          uint64        `json:"next_round"`
	Epoch              uint64        `json:"epoch"`
	InitialLoss        *float64      `json:"initial_loss"`
	StateRoot          string        `json:"state_root"`
	LedgerRoot         string        `json:"ledger_root"`
	ContributionBytes  int64         `json:"contribution_bytes"`
	WireBytesSent      int64         `json:"wire_bytes_sent"`
	WireBytesReceived  int64         `json:"wire_bytes_received"`
	StallS             float64       `json:"stall_s"`
	LateRounds         int64         `json:"late_rounds"`   // rounds whose local work was dropped: the peers had closed them
	MergedRounds       int64         `json:"merged_rounds"` // rounds closed during the next round's local work, which moved to θ after them (the recipe's outer.merge)
	VerifyCPUS         float64       `json:"verify_cpu_s"`
	PeakRSSBytes       int64         `json:"peak_rss_bytes"`
	DenseBytesPerRound int64         `json:"dense_bytes_per_round"`
	Adversary          string        `json:"adversary,omitempty"` // the adversary mode the node runs, if any
	Slashed            []string      `json:"slashed"`
	Rounds             []RoundStatus `json:"rounds"`
}

// gauges are what progress reads from the rest of the node when asked; each must be safe
// for concurrent use.
type gauges struct {
	bandwidth func() (sent, received int64)
	verifyCPU func() time.Duration
	inbox     func() int
	stash     func() int
}

// progress is what the node reports of its training: the log line per closed round,
// GET /status's training object and the Prometheus metrics. The loop writes it; the API
// reads it. Safe for concurrent use.
type progress struct {
	log *slog.Logger
	g   gauges
	met *progressMetrics

	mu       sync.Mutex
	st       TrainingStatus
	pending  map[uint64]bool // rounds closed and waiting for their loss, not logged yet
	lastSent int64           // wire totals at the last close
	lastRecv int64
}

func newProgress(log *slog.Logger, reg prometheus.Registerer, g gauges, st TrainingStatus) (*progress, error) {
	st.Slashed, st.Rounds = []string{}, []RoundStatus{}
	p := &progress{log: log, g: g, st: st, pending: map[uint64]bool{}}
	var err error
	if p.met, err = newProgressMetrics(reg, g); err != nil {
		return nil, err
	}
	return p, nil
}

// merged counts a round closed during the next round's local work (core.Ready.Shift).
func (p *progress) merged() {
	p.mu.Lock()
	p.st.MergedRounds++
	p.mu.Unlock()
}

// late notes rounds whose local work the core dropped because the node's peers had closed
// them (core.Ready.Late), with a log line: the node is slower than its peers, and its
// contributions to those rounds would have come after their close.
func (p *progress) late(rounds []uint64) {
	if len(rounds) == 0 {
		return
	}
	p.mu.Lock()
	p.st.LateRounds += int64(len(rounds))
	total := p.st.LateRounds
	p.mu.Unlock()
	if p.met != nil {
		p.met.late.Add(float64(len(rounds)))
	}
	p.log.Info("local work dropped: the peers had closed its rounds before it was done (this node is slower than they are)",
		"rounds", rounds, "late_rounds", total)
}

// roundClosed records a closed round. scored says its loss will follow (evaluated); if not,
// the round is logged now without one.
func (p *progress) roundClosed(r RoundStatus, slashed []string, scored bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	sent, recv := p.g.bandwidth()
	r.WireBytesSent, r.WireBytesReceived = sent-p.lastSent, recv-p.lastRecv
	p.lastSent, p.lastRecv = sent, recv
	p.st.NextRound = max(p.st.NextRound, r.Round+1)
	p.st.StateRoot, p.st.LedgerRoot = r.StateRoot, r.LedgerRoot
	p.st.ContributionBytes += int64(r.ContributionBytes)
	p.st.StallS += r.StallS
	for _, s := range slashed {
		if !slices.Contains(p.st.Slashed, s) {
			p.st.Slashed = append(p.st.Slashed, s)
		}
	}
	slices.Sort(p.st.Slashed)
	p.st.Rounds = append(p.st.Rounds, r)
	if len(p.st.Rounds) > maxRounds {
		p.st.Rounds = slices.Delete(p.st.Rounds, 0, len(p.st.Rounds)-maxRounds)
	}
	p.met.closed(r)
	if scored {
		p.pending[r.Round] = true
		return
	}
	p.logRound(r)
}

// evaluated records the held-out loss of θ after closing round (of θ_0 if initial).
func (p *progress) evaluated(e evalResult) {
	if e.err != nil {
		p.log.Warn("evaluating the model", "round", e.round, "err", e.err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	loss := e.loss
	if e.initial {
		if e.err == nil {
			p.st.InitialLoss = &loss
		}
		return
	}
	for i := len(p.st.Rounds) - 1; i >= 0; i-- {
		if r := &p.st.Rounds[i]; r.Round == e.round {
			if e.err == nil {
				r.Loss = &loss
				p.met.loss.Set(loss)
			}
			if p.pending[e.round] {
				p.logRound(*r)
			}
			break
		}
	}
	delete(p.pending, e.round)
}

func (p *progress) logRound(r RoundStatus) {
	loss := math.NaN()
	if r.Loss != nil {
		loss = *r.Loss
	}
	p.log.Info("round closed", "round", r.Round, "loss", loss, "included", len(r.Included),
		"rejected", r.Rejected, "evidence", r.Evidence, "contribution_bytes", r.ContributionBytes,
		"wire_bytes_sent", r.WireBytesSent, "wire_bytes_received", r.WireBytesReceived,
		"stall_s", r.StallS, "deadline_s", r.DeadlineS, "ranks", r.Ranks,
		"state_root", r.StateRoot, "ledger_root", r.LedgerRoot)
}

// setEpoch records the attestation epoch of the node's local work.
func (p *progress) setEpoch(e uint64) {
	p.mu.Lock()
	p.st.Epoch = e
	p.mu.Unlock()
}

// setAdversary names the adversary mode the node runs.
func (p *progress) setAdversary(kind string) {
	p.mu.Lock()
	p.st.Adversary = kind
	p.mu.Unlock()
}

// status returns a copy of the training status with the live counters filled in.
func (p *progress) status() *TrainingStatus {
	p.mu.Lock()
	st := p.st
	st.Slashed = slices.Clone(p.st.Slashed)
	st.Rounds = slices.Clone(p.st.Rounds)
	p.mu.Unlock()
	st.WireBytesSent, st.WireBytesReceived = p.g.bandwidth()
	st.VerifyCPUS = p.g.verifyCPU().Seconds()
	st.PeakRSSBytes = peakRSS()
	return &st
}

// hexRoot is a root as GET /status and the log show it.
func hexRoot(r [32]byte) string { return hex.EncodeToString(r[:]) }
