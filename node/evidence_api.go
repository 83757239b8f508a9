package node

import (
	"encoding/hex"
	"fmt"
	"net/http"

	"github.com/ipfs/go-cid"

	"github.com/lowband/lowband/incentives"
)

// Slash is one entry of GET /evidence: a penalty the ledger applied, and the evidence that
// proves it (GET /evidence/{id}).
type Slash struct {
	Peer         string `json:"peer"`
	Round        uint64 `json:"round"` // the round whose record applied the penalty
	Amount       uint64 `json:"amount"`
	Evidence     string `json:"evidence"` // evidence ID, hex
	Kind         string `json:"kind"`
	OffenceRound uint64 `json:"offence_round"`
}

// EvidenceView is the body of GET /evidence/{id}: stored evidence, decoded.
type EvidenceView struct {
	ID     string          `json:"id"`
	Kind   string          `json:"kind"`
	Peer   string          `json:"peer"`  // the accused
	Round  uint64          `json:"round"` // of the offence
	Index  uint32          `json:"index"` // shard index (0 for an invalid attestation)
	Proves string          `json:"proves"`
	Shards []EvidenceShard `json:"shards"` // the signed shard headers it carries
	// PayloadBytes is the size of the payload that failed the content checks (invalid
	// content only).
	PayloadBytes int    `json:"payload_bytes,omitempty"`
	Penalty      *Slash `json:"penalty,omitempty"` // the penalty it led to in this node's ledger
}

// EvidenceShard is one signed shard header of evidence.
type EvidenceShard struct {
	Round      uint64 `json:"round"`
	Index      uint32 `json:"index"`
	Count      uint32 `json:"count"`
	BundleHash string `json:"bundle_hash"`
	PayloadCID string `json:"payload_cid"`
}

// evidenceHandlers are the read-only evidence endpoints: GET /evidence, the penalties of
// the ledger in force, and GET /evidence/{id}.
func (l *ledger) evidenceHandlers() map[string]http.Handler {
	return map[string]http.Handler{
		"/evidence": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			s, err := l.slashes()
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			writeJSON(w, s)
		}),
		"/evidence/{id}": http.HandlerFunc(l.serveEvidence),
	}
}

// slashes lists the penalties of every account with an offence, by peer then round.
func (l *ledger) slashes() ([]Slash, error) {
	out := []Slash{}
	for _, a := range l.state.Load().Accounts {
		if a.Offences == 0 {
			continue
		}
		events, err := l.st.History(a.Peer)
		if err != nil {
			return nil, fmt.Errorf("history of %s: %w", a.Peer, err)
		}
		for _, e := range events {
			if e.Kind == incentives.EventPenalty {
				out = append(out, slashOf(e))
			}
		}
	}
	return out, nil
}

func slashOf(e incentives.Event) Slash {
	s := Slash{Peer: e.Peer, Round: e.Round, Amount: e.Amount, Evidence: hex.EncodeToString(e.Evidence)}
	if e.Offence != nil {
		s.Kind, s.OffenceRound = e.Offence.Kind.String(), e.Offence.Round
	}
	return s
}

func (l *ledger) serveEvidence(w http.ResponseWriter, r *http.Request) {
	var id incentives.ID
	b, err := hex.DecodeString(r.PathValue("id"))
	if err != nil || len(b) != len(id) {
		http.Error(w, "an evidence ID is 64 hex digits", http.StatusBadRequest)
		return
	}
	copy(id[:], b)
	e, err := l.st.Evidence(id)
	switch {
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	case e == nil:
		http.Error(w, "no stored evidence has this ID", http.StatusNotFound)
		return
	}
	v := evidenceView(id, e)
	if v.Penalty, err = l.penaltyFor(v.Peer, id); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, v)
}

// penaltyFor is the penalty of peer that evidence id proved, nil if none.
func (l *ledger) penaltyFor(peer string, id incentives.ID) (*Slash, error) {
	events, err := l.st.History(peer)
	if err != nil {
		return nil, err
	}
	for _, e := range events {
		if e.Kind == incentives.EventPenalty && string(e.Evidence) == string(id[:]) {
			s := slashOf(e)
			return &s, nil
		}
	}
	return nil, nil
}

// evidenceView decodes stored evidence (its shape was checked when it was stored: one
// header, two for equivocation) into what it proves.
func evidenceView(id incentives.ID, e *incentives.Evidence) EvidenceView {
	v := EvidenceView{ID: id.String(), Kind: e.Kind.String(), PayloadBytes: len(e.Payload), Shards: []EvidenceShard{}}
	for _, sh := range e.Headers {
		h := sh.Header
		v.Shards = append(v.Shards, EvidenceShard{Round: h.Round, Index: h.Index, Count: h.Count,
			BundleHash: hex.EncodeToString(h.BundleHash), PayloadCID: cidString(h.PayloadCID)})
	}
	if len(e.Headers) > 0 {
		h := e.Headers[0].Header
		v.Peer, v.Round, v.Index = h.Peer, h.Round, h.Index
	}
	switch e.Kind {
	case incentives.KindEquivocation:
		v.Proves = fmt.Sprintf("%s signed two different shards for round %d, index %d, each under a key it attested: only one can be its contribution", v.Peer, v.Round, v.Index)
	case incentives.KindInvalidAttestation:
		v.Index = 0
		v.Proves = fmt.Sprintf("%s signed a shard of round %d under an attestation bundle that fails the network's policy (measurement, debug or TCB)", v.Peer, v.Round)
	case incentives.KindInvalidContent:
		v.Proves = fmt.Sprintf("%s signed a shard of round %d, index %d, under a valid attestation, whose %d-byte payload fails the network's content checks", v.Peer, v.Round, v.Index, len(e.Payload))
	}
	return v
}

// cidString is a binary CID in its text form, or hex when it does not parse.
func cidString(b []byte) string {
	c, err := cid.Cast(b)
	if err != nil {
		return hex.EncodeToString(b)
	}
	return c.String()
}
