package incentives

import (
	"encoding/hex"
	"fmt"
	"io"
	"text/tabwriter"
)

// Application scores for gossipsub peer scoring (the node multiplies them by its
// AppSpecificWeight, a positive number, so the product is a penalty).
const (
	// ScoreJailed is the score of a jailed peer: large enough, with the node's weight, to
	// push the peer below the graylist threshold so the mesh sheds it.
	ScoreJailed = -100.0
	// ScoreSlashed is the score of a peer penalised in the past and no longer jailed.
	ScoreSlashed = -10.0
)

// AppScore is peer's application-specific score: ScoreJailed while it is jailed,
// ScoreSlashed if it was ever penalised, 0 otherwise. It never rewards: stake does not buy
// gossip priority.
func (s *State) AppScore(peer string) float64 {
	a := s.Account(peer)
	switch {
	case s.jailed(a):
		return ScoreJailed
	case a.Offences > 0:
		return ScoreSlashed
	}
	return 0
}

// Table is the ledger as the node's API serves it (GET /ledger) and the CLI prints it.
type Table struct {
	// Root is the ledger root (hex); Head the state root of the last applied record.
	Root       string    `json:"root"`
	Head       string    `json:"head"`
	Round      uint64    `json:"round"` // next round the ledger expects
	TotalPower uint64    `json:"total_power"`
	Peers      []PeerRow `json:"peers"`
}

// PeerRow is one account in a Table.
type PeerRow struct {
	Peer          string  `json:"peer"`
	Stake         uint64  `json:"stake"`
	Balance       uint64  `json:"balance"`
	Power         uint64  `json:"power"`
	Jailed        bool    `json:"jailed"`
	JailedUntil   uint64  `json:"jailed_until,omitempty"`
	Offences      uint64  `json:"offences"`
	Contributions uint64  `json:"contributions"`
	Score         float64 `json:"score"`
}

// Table returns the ledger as a table, peers in sorted order.
func (s *State) Table() Table {
	root := s.Root()
	t := Table{
		Root: hex.EncodeToString(root[:]), Head: hex.EncodeToString(s.Head),
		Round: s.Round, TotalPower: s.TotalPower(), Peers: []PeerRow{},
	}
	for _, a := range s.Accounts {
		t.Peers = append(t.Peers, PeerRow{
			Peer: a.Peer, Stake: a.Stake, Balance: a.Balance, Power: s.power(a),
			Jailed: s.jailed(a), JailedUntil: a.JailedUntil, Offences: a.Offences,
			Contributions: a.Contributions, Score: s.AppScore(a.Peer),
		})
	}
	return t
}

// WriteText prints the table for people.
func (t Table) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "root %s\nhead %s\nround %d  total power %d\n", t.Root, t.Head, t.Round, t.TotalPower)
	fmt.Fprintln(tw, "PEER\tSTAKE\tBALANCE\tPOWER\tJAILED\tOFFENCES\tCONTRIBUTIONS\tSCORE")
	for _, p := range t.Peers {
		jail := "-"
		if p.Jailed {
			jail = fmt.Sprintf("until %d", p.JailedUntil)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%d\t%d\t%g\n", p.Peer, p.Stake, p.Balance, p.Power, jail, p.Offences, p.Contributions, p.Score)
	}
	return tw.Flush()
}
