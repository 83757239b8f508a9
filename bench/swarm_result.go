package bench

import (
	"slices"
	"time"

	"github.com/lowband/lowband/node"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// SwarmResult is the JSON object `lowband bench swarm --json` prints. Per node-round
// figures are means over the honest nodes and the measured rounds.
type SwarmResult struct {
	Task      string `json:"task"`
	Nodes     int    `json:"nodes"`
	Rounds    int    `json:"rounds"`
	H         int    `json:"h"`
	Batch     int    `json:"batch"`
	Transport string `json:"transport"`
	// ComputeSlots is how many nodes could compute at once (0: no limit).
	ComputeSlots int `json:"compute_slots"`
	// Aggregation is the network's aggregation rule (with its trim for trimmed_mean).
	Aggregation string `json:"aggregation"`
	// Merge is the recipe's outer.merge (rounds closed during the next round's work).
	Merge bool `json:"merge"`
	// LinkCheck, on emulated links, is one transfer across a link like the nodes': its
	// time against its bytes over the uplink plus the latency each way.
	LinkCheck *p2ptest.LinkCheck `json:"link_check,omitempty"`
	// DenseBytes is one dense fp32 pseudo-gradient.
	DenseBytes int64 `json:"dense_bytes"`
	// StallShare is, for the worst honest node, the time its local work waited for a round
	// to close over the wall-clock time from the swarm's start to the last round's close.
	StallShare float64 `json:"stall_share"`
	// ExchangeStallShare is StallShare counting only what an exchange taking no time would
	// have saved: of each wait for a round to close, the part after every other node had
	// sent its contribution to the round (the nodes' RoundStatus.SentAt). Before that the
	// wait is for a peer still computing (the nodes' uneven shares of the machine, not the
	// network); a round some node had sent nothing to by the close waited for it, or closed
	// at its deadline without it, either way.
	ExchangeStallShare float64 `json:"exchange_stall_share"`
	// ContributionBytesPerNodeRound is a node's own signed shard bytes per round.
	ContributionBytesPerNodeRound float64 `json:"contribution_bytes_per_node_round"`
	// WireBytesPerNodeRound is what a node sent per round over every protocol (gossip
	// forwarding, fetches, DHT); WireBytesReceivedPerNodeRound what it received.
	WireBytesPerNodeRound         float64 `json:"wire_bytes_per_node_round"`
	WireBytesReceivedPerNodeRound float64 `json:"wire_bytes_received_per_node_round"`
	// WireBytesPerNodeRoundFormed is WireBytesPerNodeRound over the rounds after round 0
	// (absent with one round): what a node sends a round once the swarm has formed. Round
	// 0 holds the forming (the DHT's joins and lookups, every attestation bundle) and,
	// with the one-step delay, two rounds' contributions: a node publishes round 1's
	// before round 0 closes.
	WireBytesPerNodeRoundFormed float64 `json:"wire_bytes_per_node_round_formed,omitempty"`
	// RingAllReduceBytesPerNodeRound is what a ring all-reduce of one dense fp32
	// pseudo-gradient sends per node (and receives): 2(N−1)/N of it.
	RingAllReduceBytesPerNodeRound float64 `json:"ring_allreduce_bytes_per_node_round"`
	// Wire breaks the wire bytes down by protocol and gossip part (emulated links only).
	Wire *WireBreakdown `json:"wire_breakdown,omitempty"`
	// VerifyShare is the nodes' CPU time in verification over the process's CPU time
	// during the run (every node of the swarm runs in this process). The node charges
	// each verification call the CPU time of its thread (Linux; other systems are charged
	// wall time).
	VerifyShare float64 `json:"verify_share"`
	// PeakRSSBytes is the process's peak resident memory: the whole in-process swarm's,
	// not one node's.
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// PeakRSSPerNodeBytes is PeakRSSBytes over the nodes, the bootstrap node counted: what
	// one node's share of the process is, not what a node alone would hold.
	PeakRSSPerNodeBytes int64    `json:"peak_rss_per_node_bytes"`
	EvalLoss            LossPair `json:"eval_loss"`
	// AllReduceEvalLoss is the same run's dense AllReduce baseline at equal tokens: one
	// worker per honest node on its slice, the spec's model, θ_0, batch and inner
	// optimizer, gradients averaged every step for Rounds·H steps (in this process, not
	// over the network), scored on the nodes' held-out batch.
	AllReduceEvalLoss float64 `json:"allreduce_eval_loss"`
	// RootsAgree is true when every honest node holds the same state and ledger roots
	// after the last measured round, once they have had up to 30 s to settle it.
	RootsAgree  bool    `json:"roots_agree"`
	WallSeconds float64 `json:"wall_seconds"`
	CPUSeconds  float64 `json:"cpu_seconds"`

	// With adversaries: each one, how many adversaries every honest node slashed, how
	// many honest peers any honest node slashed, and how many contributions of a kind
	// refused by rule (node.BadIn) an honest node aggregated (must be 0).
	Adversaries      []SwarmAdversary `json:"adversaries,omitempty"`
	SlashedCorrectly *int             `json:"slashed_correctly,omitempty"`
	HonestSlashed    *int             `json:"honest_slashed,omitempty"`
	BadAggregated    *int             `json:"bad_aggregated,omitempty"`
}

// LossPair is the honest nodes' mean held-out loss of θ_0 and after the last round.
type LossPair struct {
	Initial float64 `json:"initial"`
	Final   float64 `json:"final"`
}

// SwarmAdversary is one adversary node: its kind, how many honest nodes slashed it, and
// in how many rounds, summed over the honest nodes, its contribution was aggregated.
type SwarmAdversary struct {
	Kind       string `json:"kind"`
	PeerID     string `json:"peer_id"`
	SlashedBy  int    `json:"slashed_by"`
	Aggregated int    `json:"aggregated"`
}

// swarmNode is one training node's status at the end of a run.
type swarmNode struct {
	peer      string
	adversary string
	st        *node.TrainingStatus
}

// measured returns the rounds [0, rounds) of a status, in order.
func measured(st *node.TrainingStatus, rounds int) []node.RoundStatus {
	var out []node.RoundStatus
	for _, r := range st.Rounds {
		if r.Round < uint64(rounds) {
			out = append(out, r)
		}
	}
	return out
}

// fillSwarm fills res's measurements from the nodes' statuses; wall is the run's
// wall-clock seconds.
func fillSwarm(res *SwarmResult, nodes []swarmNode, wall float64) {
	var honest []swarmNode
	for _, n := range nodes {
		if n.adversary == "" {
			honest = append(honest, n)
		}
	}
	sentAt := sentTimes(nodes)
	nr := float64(len(honest) * res.Rounds)
	var contrib, sent, recv, initial, final, formed float64
	res.RootsAgree = true
	var root, ledger string
	for i, n := range honest {
		rs := measured(n.st, res.Rounds)
		var stall, exchange float64
		for _, r := range rs {
			exchange += exchangeStall(n.peer, r, sentAt)
			contrib += float64(r.ContributionBytes)
			sent += float64(r.WireBytesSent)
			if r.Round > 0 {
				formed += float64(r.WireBytesSent)
			}
			recv += float64(r.WireBytesReceived)
			stall += r.StallS
		}
		res.StallShare = max(res.StallShare, stall/wall)
		res.ExchangeStallShare = max(res.ExchangeStallShare, exchange/wall)
		if n.st.InitialLoss != nil {
			initial += *n.st.InitialLoss
		}
		if len(rs) > 0 {
			last := rs[len(rs)-1]
			if last.Loss != nil {
				final += *last.Loss
			}
			if i == 0 {
				root, ledger = last.StateRoot, last.LedgerRoot
			} else if last.StateRoot != root || last.LedgerRoot != ledger {
				res.RootsAgree = false
			}
		}
		res.DenseBytes = n.st.DenseBytesPerRound
	}
	res.ContributionBytesPerNodeRound, res.WireBytesPerNodeRound, res.WireBytesReceivedPerNodeRound = contrib/nr, sent/nr, recv/nr
	if res.Rounds > 1 {
		res.WireBytesPerNodeRoundFormed = formed / float64(len(honest)*(res.Rounds-1))
	}
	res.EvalLoss = LossPair{Initial: initial / float64(len(honest)), Final: final / float64(len(honest))}
	res.RingAllReduceBytesPerNodeRound = 2 * float64(res.Nodes-1) / float64(res.Nodes) * float64(res.DenseBytes)
	res.WallSeconds = wall
	res.PeakRSSPerNodeBytes = res.PeakRSSBytes / int64(res.Nodes+1)
	fillAdversaries(res, nodes, honest)
}

// fillAdversaries fills the adversary fields when any node runs an adversary mode.
func fillAdversaries(res *SwarmResult, nodes, honest []swarmNode) {
	if len(honest) == len(nodes) {
		return
	}
	correct, wronged, bad := 0, 0, 0
	for _, a := range nodes {
		if a.adversary == "" {
			continue
		}
		sa := SwarmAdversary{Kind: a.adversary, PeerID: a.peer}
		for _, h := range honest {
			if slices.Contains(h.st.Slashed, a.peer) {
				sa.SlashedBy++
			}
			for _, r := range measured(h.st, res.Rounds) {
				if slices.Contains(r.Included, a.peer) && !slices.Contains(r.Filtered, a.peer) { // filtered: aggregated with no weight
					sa.Aggregated++
					if node.BadIn(a.adversary) {
						bad++
					}
				}
			}
		}
		if sa.SlashedBy == len(honest) {
			correct++
		}
		res.Adversaries = append(res.Adversaries, sa)
	}
	for _, p := range honest {
		if slices.ContainsFunc(honest, func(h swarmNode) bool { return slices.Contains(h.st.Slashed, p.peer) }) {
			wronged++
		}
	}
	res.SlashedCorrectly, res.HonestSlashed, res.BadAggregated = &correct, &wronged, &bad
}

// sentTimes is, by peer and round, when each node's contribution went out (RoundStatus.SentAt).
func sentTimes(nodes []swarmNode) map[string]map[uint64]time.Time {
	out := make(map[string]map[uint64]time.Time, len(nodes))
	for _, n := range nodes {
		m := map[uint64]time.Time{}
		for _, r := range n.st.Rounds {
			if t, err := time.Parse(time.RFC3339Nano, r.SentAt); err == nil {
				m[r.Round] = t
			}
		}
		out[n.peer] = m
	}
	return out
}

// exchangeStall is the part of self's wait for round r to close that an exchange taking
// no time at all would have saved (ExchangeStallShare), in seconds: the time after the
// wait began and every other node had sent its contribution to r. A wait with a node that
// had not sent one by the close (still computing, behind, silent) saves nothing: the round
// waited for it, or closed without it at its deadline, as it would have anyway.
func exchangeStall(self string, r node.RoundStatus, sent map[string]map[uint64]time.Time) float64 {
	if r.StallS <= 0 {
		return 0
	}
	closed, err := time.Parse(time.RFC3339Nano, r.ClosedAt)
	if err != nil {
		return r.StallS
	}
	stall := time.Duration(r.StallS * float64(time.Second))
	from := closed.Add(-stall) // when the wait began
	for p, rounds := range sent {
		if p == self {
			continue
		}
		t, ok := rounds[r.Round]
		if !ok || !t.Before(closed) {
			return 0
		}
		from = later(from, t)
	}
	return min(max(closed.Sub(from), 0), stall).Seconds()
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
