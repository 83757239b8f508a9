package bench

import "github.com/lowband/lowband/p2p"

// WireBreakdown is where the honest nodes' wire bytes went, per node-round, from the
// swarm's start until every honest node had closed the measured rounds (on emulated
// links only: the hosts see their streams' bytes there). Stream bytes are by protocol;
// gossip bytes by what the RPCs carried; duplicates are copies of a message received
// after its first; fetch bytes served are the answers by request kind.
type WireBreakdown struct {
	Sent           map[string]float64 `json:"sent_by_protocol"`
	Received       map[string]float64 `json:"received_by_protocol"`
	Gossip         map[string]float64 `json:"gossip_sent_by_part"`
	GossipMsgs     map[string]float64 `json:"gossip_msgs_sent"`
	Duplicates     map[string]float64 `json:"duplicates_received"`
	DuplicateBytes map[string]float64 `json:"duplicate_bytes_received"`
	FetchServed    map[string]float64 `json:"fetch_bytes_served_by_kind"`
}

// newWireBreakdown divides the summed counts by nr node-rounds.
func newWireBreakdown(s p2p.WireSnapshot, nr float64) *WireBreakdown {
	per := func(m map[string]int64) map[string]float64 {
		out := make(map[string]float64, len(m))
		for k, v := range m {
			out[k] = float64(v) / nr
		}
		return out
	}
	return &WireBreakdown{Sent: per(s.Sent), Received: per(s.Received), Gossip: per(s.Gossip),
		GossipMsgs: per(s.GossipMsgs), Duplicates: per(s.Duplicates), DuplicateBytes: per(s.DuplicateBytes),
		FetchServed: per(s.Served)}
}
