package p2p

import (
	"fmt"

	"github.com/libp2p/go-libp2p/core/protocol"
)

// Topic kinds a node can join. Each names one gossip topic per network and run.
const (
	KindShards   = "shards"
	KindRecords  = "records"
	KindEvidence = "evidence"
	KindAttest   = "attest"
)

// Kinds lists the topic kinds in a stable order.
var Kinds = []string{KindShards, KindRecords, KindEvidence, KindAttest}

// MaxMessageSize is the largest payload Publish accepts. Gossipsub frames a message
// in an RPC capped at 1 MiB and drops a larger RPC silently at send; the difference
// leaves room for the envelope (topic and framing; messages carry no author).
const MaxMessageSize = 1<<20 - 16<<10

// DHTPrefix is the private DHT's protocol prefix: the DHT speaks
// /lowband/<net>/kad/1.0.0 and never meets the public IPFS DHT.
func DHTPrefix(network string) protocol.ID {
	return protocol.ID("/lowband/" + network)
}

// TopicName is the gossip topic of one kind in one run of one network.
func TopicName(network, run, kind string) string {
	return fmt.Sprintf("lowband/%s/%s/%s/1", network, run, kind)
}

// FetchProtocol is the stream protocol for fetching shards, bundles and
// checkpoints by CID.
func FetchProtocol(network string) protocol.ID {
	return protocol.ID("/lowband/" + network + "/fetch/1.0.0")
}

// Rendezvous is the string under which the nodes of one run advertise themselves
// in the DHT.
func Rendezvous(network, run string) string {
	return fmt.Sprintf("lowband/%s/%s/rendezvous/1", network, run)
}
