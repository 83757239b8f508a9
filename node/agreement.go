package node

import (
	"errors"
	"fmt"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/verify"
)

// AgreementStatus is the "agreement" object of GET /status: where this node stands
// against the canonical rounds (absent on a bootstrap node).
type AgreementStatus struct {
	Head           uint64 `json:"head"`            // last closed round
	Root           string `json:"root"`            // this node's state root of Head, hex
	Canonical      string `json:"canonical_root"`  // state root of the last round whose canonical list is decided; "" none yet
	CanonicalRound uint64 `json:"canonical_round"` // that round
	Agrees         bool   `json:"agrees"`          // this node holds the canonical state of every round decided
	Stale          bool   `json:"stale"`           // a repair left the window unfinished: only a checkpoint helps
	Repairs        int    `json:"repairs"`         // rounds closed again so far
	Waiting        int    `json:"waiting"`         // shards a pending repair still waits for
	// Resyncs counts the times the running node found itself off its peers' lineage
	// (behind by more than the repair window, or on a root their majority does not hold)
	// and caught up from its store, the peers' records and a checkpoint.
	Resyncs    int           `json:"resyncs"`
	LastResync *ResyncStatus `json:"last_resync,omitempty"` // the last of them
}

// agreementStatus is the core's agreement as GET /status shows it.
func agreementStatus(a core.Agreement) *AgreementStatus {
	st := &AgreementStatus{
		Head: a.Head, Root: hexRoot(a.Root), CanonicalRound: a.CanonicalRound,
		Agrees: a.Agrees, Stale: a.Stale, Repairs: a.Repairs, Waiting: a.Waiting,
	}
	if a.Canonical != ([32]byte{}) {
		st.Canonical = hexRoot(a.Canonical)
	}
	return st
}

// Agreement is the core's agreement after the last event. Safe for concurrent use.
func (l *loop) Agreement() core.Agreement { return *l.agreement.Load() }

// record gives a signed record that passed every check to the core. A record the core
// does not take (outside its window, of a signer without power, a second one) is dropped
// and logged; so is one whose repair failed, which changed nothing: a peer's record never
// stops the node.
func (l *loop) record(in recordIn) (core.Ready, error) {
	power := l.core.Ledger().Power(in.sr.Signer)
	rd, err := l.core.Record(l.clk.Now(), in.sr, in.rec)
	switch {
	case err == nil:
		l.votes.add(in.rec.Round, in.rec.NewRoot, power)
		return rd, nil
	case errors.Is(err, core.ErrRecord), errors.Is(err, core.ErrRecordWindow),
		errors.Is(err, core.ErrRecordNoPower), errors.Is(err, core.ErrRecordDuplicate):
		l.log.Debug("record not taken", "round", in.rec.Round, "signer", in.sr.Signer, "err", err)
	default:
		l.log.Warn("repair failed", "round", in.rec.Round, "signer", in.sr.Signer, "err", err)
	}
	return core.Ready{}, nil
}

// fetchedForRepair notes a shard fetched by CID for the pending repair.
func (l *loop) fetchedForRepair(s *verify.Shard) {
	if l.fetched == nil {
		l.fetched = map[slot]struct{}{}
	}
	l.fetched[slotOf(&s.Header)] = struct{}{}
}

// persistRepair persists a repair and reports it: a log line (rounds, old and new root,
// contributions and shards fetched for it) and the metrics.
func (l *loop) persistRepair(rp *core.Repair) error {
	if l.deps.repair == nil {
		return fmt.Errorf("round loop: a repair of rounds from %d and no store to persist it", rp.From)
	}
	if err := l.deps.repair(rp); err != nil {
		return err
	}
	contribs := map[[2]string]struct{}{}
	for k := range l.fetched {
		contribs[[2]string{fmt.Sprint(k.round), k.peer}] = struct{}{}
	}
	last := rp.Commits[len(rp.Commits)-1].Record.Round
	l.log.Info("rounds repaired", "from", rp.From, "to", last, "rounds", len(rp.Commits),
		"old_root", hexRoot(rp.OldRoot), "new_root", hexRoot(rp.NewRoot),
		"contributions_fetched", len(contribs), "shards_fetched", len(l.fetched))
	l.fetched = nil
	l.prog.repaired(rp.Commits)
	if l.agreeMet != nil {
		l.agreeMet.repaired(len(rp.Commits))
	}
	return nil
}

// repaired rewrites the rounds closed again in the status: who was included, evidence
// and roots are the repaired rounds'.
func (p *progress) repaired(commits []*core.Commit) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range commits {
		p.rewrite(c.Record, c.State)
	}
}

// rewrite puts the committed record rec of a round closed again, with the ledger state
// after it, in the round's status, and in the node's roots when it is the last round
// closed. The caller holds p.mu.
func (p *progress) rewrite(rec *incentives.Record, led *incentives.State) {
	i := slices.IndexFunc(p.st.Rounds, func(r RoundStatus) bool { return r.Round == rec.Round })
	if i < 0 {
		return
	}
	r := &p.st.Rounds[i]
	r.Included, r.Filtered = make([]string, len(rec.Contributions)), nil
	for j, e := range rec.Contributions {
		r.Included[j] = e.Peer
		if e.Dropped {
			r.Filtered = append(r.Filtered, e.Peer)
		}
	}
	r.Evidence, r.Repaired = len(rec.Evidence), true
	r.StateRoot, r.LedgerRoot = hexRoot([32]byte(rec.NewRoot)), hexRoot(led.Root())
	if rec.Round+1 == p.st.NextRound {
		p.st.StateRoot, p.st.LedgerRoot = r.StateRoot, r.LedgerRoot
	}
}

// agreementMetrics are the agreement's Prometheus metrics: repairs and rounds repaired
// (counters), and gauges read from the loop's latest agreement when scraped.
type agreementMetrics struct {
	repairs, rounds, resyncs prometheus.Counter
}

func newAgreementMetrics(reg prometheus.Registerer, get func() core.Agreement) (*agreementMetrics, error) {
	m := &agreementMetrics{
		repairs: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "lowband", Subsystem: "agreement", Name: "repairs_total",
			Help: "Repairs this node made: each closed one or more rounds again with their canonical inclusion lists."}),
		rounds: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "lowband", Subsystem: "agreement", Name: "repaired_rounds_total",
			Help: "Rounds this node closed again with their canonical inclusion lists."}),
		resyncs: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "lowband", Subsystem: "agreement", Name: "resyncs_total",
			Help: "Times the running node found itself off its peers' lineage and caught up from its store, their records and a checkpoint."}),
	}
	gauge := func(name, help string, f func(core.Agreement) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "lowband", Subsystem: "agreement", Name: name, Help: help},
			func() float64 { return f(get()) })
	}
	for _, c := range []prometheus.Collector{m.repairs, m.rounds, m.resyncs,
		gauge("agrees", "1 when this node holds the canonical state of every round the records it saw decide, else 0.",
			func(a core.Agreement) float64 { return boolGauge(a.Agrees) }),
		gauge("head_round", "The last round this node closed.", func(a core.Agreement) float64 { return float64(a.Head) }),
		gauge("canonical_round", "The last closed round whose canonical inclusion list records carrying a stake majority decide.",
			func(a core.Agreement) float64 { return float64(a.CanonicalRound) }),
		gauge("waiting_shards", "Shards a pending repair still waits for.", func(a core.Agreement) float64 { return float64(a.Waiting) }),
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("registering agreement metrics: %w", err)
		}
	}
	return m, nil
}

func (m *agreementMetrics) repaired(rounds int) {
	m.repairs.Inc()
	m.rounds.Add(float64(rounds))
}

func (m *agreementMetrics) resynced() { m.resyncs.Inc() }

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
