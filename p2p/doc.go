// Package p2p is lowband's network layer: a libp2p host (TCP and QUIC, Noise,
// yamux, connection and resource managers), a private Kademlia DHT per network,
// rendezvous discovery through that DHT, gossipsub topics per run, and a
// request/response stream helper. It moves bytes, topic kinds and peer IDs; it
// knows nothing of shards, ledgers or attestations.
//
// # Names
//
// Every name on the wire derives from the network ID (the network spec's hash),
// so hosts of different networks never mix: the DHT speaks
// /lowband/<net>/kad/1.0.0 (DHTPrefix), gossip topics are
// lowband/<net>/<run>/<kind>/1 (TopicName), and fetches use
// /lowband/<net>/fetch/1.0.0 (FetchProtocol).
//
// # Usage
//
//	h, err := p2p.New(ctx, p2p.Config{Identity: key, Listen: addrs, Network: net, Run: run,
//		Bootstrap: boot, Cached: cached, Topics: p2p.Kinds})
//	defer h.Close()
//	h.SetValidator(p2p.KindShards, check) // before subscribing, so nothing unchecked is delivered
//	sub, err := h.Subscribe(p2p.KindShards)
//	msg, err := sub.Next(ctx)
//	err = h.Publish(ctx, p2p.KindShards, data) // at most MaxMessageSize bytes
//
// New returns once the host listens; joining the network happens in the
// background. A host whose bootstrap and cached peers do not answer keeps
// running, logs one line per attempt naming what it tried, and retries with a
// doubling wait capped at Config.RetryMax. Once connected, it advertises itself
// under the run's rendezvous string (Rendezvous) in the DHT, re-advertising at a
// growing interval, and connects to the peers it finds there until it holds
// Config.ConnLow connections.
//
// # Gossip
//
// Message IDs are the SHA-256 of the payload, flood publishing is on, and peer
// scoring carries an application score (Config.AppScore, SetAppScore): a score of
// -1000 or less stops gossip with a peer, -4000 or less graylists it. The
// IP-colocation penalty is on only when Config.ColocationPenalty is set.
//
// All methods of Host are safe for concurrent use.
package p2p
