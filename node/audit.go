package node

import (
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/checkpoint"
	"github.com/lowband/lowband/node/store"
	"github.com/lowband/lowband/training/round"
)

// How an audited round was checked (AuditRound.Checked).
const (
	// CheckedFull: θ and momentum recomputed from the stored shards (core.JoinShards,
	// round.Step with core.WeightsOf), the model root, which contributions the rule left
	// out whole (the record's Dropped flags), the ledger transition and NewRoot.
	CheckedFull = "full"
	// CheckedLedger: no shards (or no model state to apply them to): the ledger transition
	// and the chain only; the record's model root is taken as it says.
	CheckedLedger = "ledger"
)

// AuditRound is one line of a run's lineage.
type AuditRound struct {
	Round        uint64   `json:"round"`
	Root         string   `json:"root"` // the record's NewRoot, hex
	Contributors []string `json:"contributors"`
	// Filtered are the contributors the record marks Dropped: the aggregation rule left
	// them out whole and they earned nothing (checked against the close when Checked is
	// CheckedFull).
	Filtered   []string `json:"filtered"`
	Evidence   int      `json:"evidence"`
	Slashed    []string `json:"slashed"`
	Checked    string   `json:"checked"`        // CheckedFull or CheckedLedger
	Note       string   `json:"note,omitempty"` // why a round was checked CheckedLedger
	Signature  string   `json:"signature"`      // "ok", or "none kept"
	Checkpoint bool     `json:"checkpoint"`     // a checkpoint of round Round+1 checked against Root
}

// AuditReport is what an audit found: the lineage from its start up to the first round
// that does not check out (Failed), if any.
type AuditReport struct {
	Network string `json:"network"`
	Run     string `json:"run"`
	Start   string `json:"start"` // "genesis" or "checkpoint <round>"
	// StartRoot is the state root the audit starts from: genesis's, or the earliest
	// checkpoint's, which nothing before it vouches for (compare it with a trusted one).
	StartRoot string       `json:"start_root"`
	Rounds    []AuditRound `json:"rounds"`
	Head      uint64       `json:"head"` // the first round the audited ledger has no record of
	OK        bool         `json:"ok"`
	Failed    *AuditError  `json:"failed,omitempty"`
}

// AuditError names the first round that does not check out and why.
type AuditError struct {
	Round  uint64 `json:"round"`
	Reason string `json:"reason"`
}

func (e *AuditError) Error() string { return fmt.Sprintf("round %d: %s", e.Round, e.Reason) }

// auditSource is what an audit reads: a home's store, or exported directories. Signed
// gives nil for a round whose signed record is not kept; End is the round after the last
// record held (every record before it must be there).
type auditSource interface {
	roundSource
	Signed(round uint64) ([]byte, error)
	Checkpoints() ([]store.CheckpointInfo, error)
	LoadCheckpoint(round uint64, lim checkpoint.Limits) (*checkpoint.Checkpoint, []byte, error)
	End() (uint64, error)
}

// homeSource audits a store: its records end where its ledger is.
type homeSource struct{ *store.Store }

func (h homeSource) End() (uint64, error) {
	st, err := h.State()
	if err != nil {
		return 0, err
	}
	return st.Round, nil
}

// AuditHome audits the run a stopped node's home holds, with the home's network spec.
func AuditHome(h configs.Home, s *configs.Spec) (*AuditReport, error) {
	st, err := store.Open(h.StorePath(), storeOpenTimeout)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return Audit(homeSource{st}, s)
}

var _ auditSource = (*store.Dir)(nil)

// AuditDir audits an exported run (store.ExportRecords, store.ExportCheckpoints): the
// records in records, the checkpoints in ckpts ("" for none), with the network spec s.
// Exported runs carry no shards: each round's ledger transition and the chain are checked.
func AuditDir(records, ckpts string, s *configs.Spec) (*AuditReport, error) {
	d, err := store.OpenDir(records, ckpts)
	if err != nil {
		return nil, err
	}
	return Audit(d, s)
}

// auditor walks a lineage: the model state (nil when not known: an earlier round's shards
// were missing) and the ledger of the next round.
type auditor struct {
	rp    *replayer
	spec  *configs.Spec
	lim   checkpoint.Limits
	src   auditSource
	ckpts map[uint64]bool // rounds of the kept checkpoints
	model *round.State
	led   *incentives.State
}

// Audit re-verifies a run offline from src with the network spec s: from genesis when src
// holds the record of round 0, else from its earliest checkpoint; then every record in
// round order: its signature where kept, the chain of roots, and the round closed again
// from its shards where they are all present (else the ledger transition only), and every
// kept checkpoint against the root of the record before it. It stops at the first round
// that does not check out (report.Failed). An error is returned only when the audit
// cannot start.
func Audit(src auditSource, s *configs.Spec) (*AuditReport, error) {
	a, rep, err := newAuditor(src, s)
	if err != nil || rep.Failed != nil {
		return rep, err
	}
	end, err := src.End()
	if err != nil {
		return nil, err
	}
	rep.Head = end
	for r := a.led.Round; r < end; r++ {
		line, err := a.round(r)
		if err != nil {
			rep.Failed = &AuditError{Round: r, Reason: err.Error()}
			return rep, nil
		}
		rep.Rounds = append(rep.Rounds, line)
		if line.Checkpoint {
			if err := a.checkpoint(r+1, line.Root); err != nil {
				rep.Failed = &AuditError{Round: r + 1, Reason: err.Error()}
				return rep, nil
			}
		}
	}
	rep.OK = true
	return rep, nil
}

// newAuditor finds where the audit starts: genesis, or the earliest checkpoint.
func newAuditor(src auditSource, s *configs.Spec) (*auditor, *AuditReport, error) {
	p, err := NewParams(s)
	if err != nil {
		return nil, nil, err
	}
	init, err := p.Initial()
	if err != nil {
		return nil, nil, err
	}
	a := &auditor{rp: newReplayer(p, s, ""), spec: s, src: src, ckpts: map[uint64]bool{},
		lim: checkpoint.Limits{Network: s.NetworkID(), Run: s.Run, Like: init.Params}}
	rep := &AuditReport{Network: s.NetworkID(), Run: s.Run, Start: "genesis", Rounds: []AuditRound{}}
	infos, err := src.Checkpoints()
	if err != nil {
		return nil, nil, err
	}
	for _, in := range infos {
		a.ckpts[in.Round] = true
	}
	if first, err := src.Record(0); err != nil || first != nil || len(infos) == 0 {
		a.model = &init
		if a.led, err = p.GenesisState(); err == nil {
			rep.StartRoot = hex.EncodeToString(a.led.Head)
		}
		return a, rep, err
	}
	c, _, err := src.LoadCheckpoint(infos[0].Round, a.lim)
	if err != nil {
		rep.Failed = &AuditError{Round: infos[0].Round, Reason: fmt.Sprintf("checkpoint: %v", err)}
		return a, rep, nil
	}
	a.model, a.led = &c.Model, c.Ledger
	rep.Start = fmt.Sprintf("checkpoint %d", c.Round)
	root := c.Root()
	rep.StartRoot = hex.EncodeToString(root[:])
	return a, rep, nil
}

// round checks the record of round r.
func (a *auditor) round(r uint64) (AuditRound, error) {
	rec, err := a.src.Record(r)
	if err == nil && rec == nil {
		err = errors.New("no record stored")
	}
	if err != nil {
		return AuditRound{}, err
	}
	line := AuditRound{Round: r, Root: hex.EncodeToString(rec.NewRoot), Evidence: len(rec.Evidence), Contributors: []string{}, Filtered: []string{}, Slashed: []string{}}
	for _, c := range rec.Contributions {
		line.Contributors = append(line.Contributors, c.Peer)
		if c.Dropped {
			line.Filtered = append(line.Filtered, c.Peer)
		}
	}
	if line.Signature, err = a.signature(r, rec); err != nil {
		return line, err
	}
	next, events, err := a.led.Apply(rec, a.rp.p.Checker)
	if err != nil {
		return line, fmt.Errorf("ledger: %w", err)
	}
	for _, e := range events {
		if e.Kind == incentives.EventPenalty {
			line.Slashed = append(line.Slashed, e.Peer)
		}
	}
	line.Checked, line.Note, err = a.closeModel(rec)
	a.led = next
	line.Checkpoint = a.ckpts[r+1]
	return line, err
}
