package incentives

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// Closed is what Build returns: the canonical record of the round (PrevRoot and NewRoot
// filled), the state it leads to, what happened, the valid evidence left for later rounds
// and the evidence left out for good, with the reason.
type Closed struct {
	Record *Record
	State  *State
	Events []Event
	// Deferred is valid evidence that did not fit the record (MaxEvidencePerRecord or
	// MaxRecordSize), in inclusion order (see prioritise), then evidence of rounds not
	// closed yet (at most the evidence window ahead): pass it to the next rounds' Build.
	// Evidence that falls out of the window meanwhile is then rejected.
	Deferred []Evidence
	Rejected []Rejected
}

// Rejected is evidence that Build left out for good, and why.
type Rejected struct {
	ID  ID
	Err error
}

// candidate is evidence that proves an offence inside the window.
type candidate struct {
	ev   Evidence
	id   ID
	off  Offence
	size int
	// order is the position oldest offence first, then by ID (see prioritise).
	order int
}

// Build closes round s.Round: it checks each evidence item, keeps those that prove an
// offence inside the window and not yet penalised (one item per offence, the lowest ID),
// includes as many as the record holds in the order of prioritise, defers the rest and
// the evidence of rounds not closed yet, and applies the canonical record. The receiver is not modified. Two nodes holding
// the same contributions and evidence build the same record, whatever the arrival order.
//
// Build fails only on a malformed inclusion list (too many contributions, more than
// MaxContributionsSize encoded, bad peer names or CIDs): never because of evidence.
func (s *State) Build(contribs []Contribution, evidence []Evidence, modelRoot []byte, chk EvidenceChecker) (Closed, error) {
	rec := &Record{Version: RecordVersion, Round: s.Round, PrevRoot: slices.Clone(s.Head), ModelRoot: slices.Clone(modelRoot)}
	rec.Contributions = slices.Clone(contribs)
	rec.Canonicalize()
	if err := rec.checkLimits(); err != nil {
		return Closed{}, err
	}
	chk = NewCheckCache(chk, len(evidence)+1) // each item is checked here and again in step
	cands, ahead, rejected := s.candidates(evidence, chk)
	var deferred []Evidence
	size := rec.encodedSize() + 2 // an evidence list of up to 255 items: a 2-byte header
	for _, c := range cands {
		if len(rec.Evidence) == MaxEvidencePerRecord || size+c.size > MaxRecordSize {
			deferred = append(deferred, c.ev)
			continue
		}
		size += c.size
		rec.Evidence = append(rec.Evidence, c.ev)
	}
	deferred = append(deferred, ahead...)
	rec.Canonicalize()
	next, events, err := s.step(rec, chk)
	if err != nil {
		return Closed{Rejected: rejected}, err
	}
	rec.NewRoot = slices.Clone(next.Head)
	return Closed{Record: rec, State: next, Events: events, Deferred: deferred, Rejected: rejected}, nil
}

// candidates checks evidence for the record of round s.Round and returns what may be
// included, in inclusion order (see prioritise), what may be in a later round's record
// (offences of rounds not closed yet, at most the evidence window ahead), and what never
// can be.
func (s *State) candidates(evidence []Evidence, chk EvidenceChecker) ([]candidate, []Evidence, []Rejected) {
	var cands []candidate
	var ahead []Evidence
	var rejected []Rejected
	for _, e := range evidence {
		if e.Kind == KindEquivocation {
			e.Headers = slices.Clone(e.Headers) // never reorder the caller's slice
			e.sortHeaders()
		}
		id := e.ID()
		off, err := s.checkEvidence(&e, chk, s.Round)
		if errors.Is(err, ErrOutsideWindow) && off.Round > s.Round && off.Round-s.Round <= s.Params.EvidenceWindow {
			ahead = append(ahead, e)
			continue
		}
		if err == nil {
			if _, seen := slices.BinarySearchFunc(s.Seen, off, Offence.compare); seen {
				err = fmt.Errorf("%w: %s", ErrAlreadyPenalised, off)
			}
		}
		if err != nil {
			rejected = append(rejected, Rejected{ID: id, Err: err})
			continue
		}
		cands = append(cands, candidate{ev: e, id: id, off: off, size: len(e.Marshal())})
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.off.Round, b.off.Round), a.off.compare(b.off), bytes.Compare(a.id[:], b.id[:]))
	})
	var out []candidate
	for i, c := range cands {
		switch {
		case i > 0 && cands[i-1].id == c.id: // the same item twice
		case len(out) > 0 && out[len(out)-1].off == c.off:
			rejected = append(rejected, Rejected{ID: c.id, Err: fmt.Errorf("%w: %s, by evidence %s", ErrAlreadyPenalised, c.off, out[len(out)-1].id)})
		default:
			out = append(out, c)
		}
	}
	s.prioritise(out)
	return out, ahead, rejected
}

// prioritise orders deduplicated candidates (oldest offence first) for inclusion: each
// peer's first offence before anyone's second, and among those, the offence that would
// slash more first (what the peer stands to lose before this record, up to the kind's
// penalty); ties stay oldest first. Identities with nothing to lose can make valid evidence
// against themselves for free, in the oldest round of the window, every round: oldest
// first alone would let them keep evidence against a staked peer out of every record until
// it leaves the window.
func (s *State) prioritise(cands []candidate) {
	rank := make([]int, len(cands))
	risk := make([]uint64, len(cands))
	seen := make(map[string]int)
	for i, c := range cands {
		rank[i] = seen[c.off.Peer]
		seen[c.off.Peer]++
		a := s.Account(c.off.Peer)
		risk[i] = min(addSat(a.Stake, a.Balance), s.Params.penalty(c.off.Kind))
		cands[i].order = i
	}
	slices.SortStableFunc(cands, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(rank[a.order], rank[b.order]), cmp.Compare(risk[b.order], risk[a.order]), cmp.Compare(a.order, b.order))
	})
}

// encodedSize is the size of the record's encoding with its new root filled.
func (r *Record) encodedSize() int {
	c := *r
	c.NewRoot = make([]byte, 32)
	return len(c.Marshal())
}
