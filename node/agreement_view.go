package node

import (
	"cmp"
	"encoding/hex"
	"net/http"
	"slices"
	"sync"
)

// agreementRounds is how many of the last closed rounds GET /agreement shows.
const agreementRounds = 32

// AgreementView is the body of GET /agreement: where this node stands (the "agreement"
// object of GET /status) and, for each of the last closed rounds, the state roots its
// peers' signed records name and the voting power behind each.
type AgreementView struct {
	AgreementStatus
	TotalPower uint64           `json:"total_power"` // of the ledger in force
	Rounds     []AgreementRound `json:"rounds"`      // oldest first
}

// AgreementRound is one closed round of AgreementView.
type AgreementRound struct {
	Round    uint64 `json:"round"`
	Root     string `json:"root"` // this node's state root
	Repaired bool   `json:"repaired"`
	Records  int    `json:"records"` // peers' records seen (the first of each signer)
	// Roots are the roots named by the records seen and by this node's own, with the
	// signers and the power (by the ledger when each record was taken) behind each.
	Roots []RootVotes `json:"roots"`
	// Majority is the root backed by more than half of TotalPower; "" none (yet).
	Majority string `json:"majority"`
	// CanonicalLoss is the held-out loss of the network's canonical state after the
	// round, once known: this node's loss, when its first close gave the majority's root.
	CanonicalLoss *float64 `json:"canonical_loss"`
}

// RootVotes is one root of a round and what backs it.
type RootVotes struct {
	Root    string `json:"root"`
	Signers int    `json:"signers"`
	Power   uint64 `json:"power"`
	Own     bool   `json:"own"` // this node's root
}

// voteBook keeps, for the last rounds, the roots named by the peers' records the core
// took and the power behind them. The loop writes it; the API reads it. Safe for
// concurrent use.
type voteBook struct {
	mu     sync.Mutex
	rounds map[uint64]map[string]*RootVotes
}

// add counts one signer's record of round r naming root, with its power.
func (b *voteBook) add(r uint64, root []byte, power uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.rounds == nil {
		b.rounds = map[uint64]map[string]*RootVotes{}
	}
	key := hex.EncodeToString(root)
	if b.rounds[r] == nil {
		b.rounds[r] = map[string]*RootVotes{}
		for old := range b.rounds { // keep the last rounds only
			if old+2*agreementRounds < r {
				delete(b.rounds, old)
			}
		}
	}
	v := b.rounds[r][key]
	if v == nil {
		v = &RootVotes{Root: key}
		b.rounds[r][key] = v
	}
	v.Signers++
	v.Power += power
}

// round is what the book holds of round r, with this node's own vote added: its root and
// power. Roots come sorted by power, then root.
func (b *voteBook) round(rs RoundStatus, ownPower, total uint64) AgreementRound {
	out := AgreementRound{Round: rs.Round, Root: rs.StateRoot, Repaired: rs.Repaired, Roots: []RootVotes{}}
	own := false
	b.mu.Lock()
	for _, v := range b.rounds[rs.Round] {
		rv := *v
		out.Records += rv.Signers
		if rv.Root == rs.StateRoot {
			rv.Signers, rv.Power, rv.Own, own = rv.Signers+1, rv.Power+ownPower, true, true
		}
		out.Roots = append(out.Roots, rv)
	}
	b.mu.Unlock()
	if !own {
		out.Roots = append(out.Roots, RootVotes{Root: rs.StateRoot, Signers: 1, Power: ownPower, Own: true})
	}
	slices.SortFunc(out.Roots, func(x, y RootVotes) int {
		if c := cmp.Compare(y.Power, x.Power); c != 0 {
			return c
		}
		return cmp.Compare(x.Root, y.Root)
	})
	for _, v := range out.Roots {
		if 2*v.Power > total {
			out.Majority = v.Root
		}
	}
	if out.Majority != "" && out.Majority == rs.StateRoot && !rs.Repaired {
		out.CanonicalLoss = rs.Loss
	}
	return out
}

// agreementView is GET /agreement; nil on a bootstrap node.
func (n *Node) agreementView() *AgreementView {
	if n.train == nil {
		return nil
	}
	led := n.ledger.state.Load()
	v := &AgreementView{AgreementStatus: *n.agreementStatus(), TotalPower: led.TotalPower(), Rounds: []AgreementRound{}}
	rounds := n.trainingStatus().Rounds
	own := led.Power(n.host.ID().String())
	for _, rs := range rounds[max(0, len(rounds)-agreementRounds):] {
		v.Rounds = append(v.Rounds, n.train.loop.votes.round(rs, own, v.TotalPower))
	}
	return v
}

func (n *Node) agreementHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, n.agreementView()) })
}
