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
// lowband/<net>/<run>/<kind>/1 (TopicName), fetches use
// /lowband/<net>/fetch/1.0.0 (FetchProtocol), and every host tells its clock on
// /lowband/<net>/time/1.0.0 (TimeProtocol; Prober.Clock asks it).
//
// # Usage
//
//	h, err := p2p.New(ctx, p2p.Config{Identity: key, Listen: addrs, Network: net, Run: run,
//		Bootstrap: boot, Cached: cached, Topics: p2p.Kinds, Validators: checks})
//	defer h.Close()
//	h.SetValidator(p2p.KindShards, fuller) // optional: swaps the validator atomically
//	sub, err := h.Subscribe(p2p.KindShards)
//	msg, err := sub.Next(ctx)
//	err = h.Publish(ctx, p2p.KindShards, data) // at most MaxMessageSize bytes
//
// New returns once the host listens; joining the network happens in the
// background. A host whose bootstrap and cached peers do not answer keeps
// running, logs one line per attempt naming what it tried, and retries with a
// doubling wait capped at Config.RetryMax; while connected with an empty routing
// table it has the DHT check its connected peers again on the same schedule. Once
// connected, it advertises itself under the run's rendezvous string (Rendezvous) in
// the DHT, re-advertising at a growing interval, and, while it has fewer than 24
// connections (twice gossipsub's D_hi, at most Config.ConnLow), looks the
// rendezvous up and dials the peers found there, in random order, until it has 24.
//
// # Gossip
//
// Messages carry no author, sequence number or signature (gossipsub's StrictNoSign
// with no author; a message that carries one is dropped), and the message ID is the
// SHA-256 of the payload. Whoever publishes some bytes first, the bytes are one
// message, so validators decide on the bytes alone (a Validator is told the forwarding
// neighbour, for accounting only, never an author): a verdict that depended on the
// publisher would let anyone who republishes an honest
// payload under its own key get it rejected, and the honest copy then dropped as a
// duplicate. What is signed is inside the payload and checked by the caller.
//
// Every joined topic has a validator from the moment it is joined (Config.Validators,
// required for each kind), on every host, relaying bootstrap hosts included. A
// rejected or ignored message stays in gossipsub's seen cache and is never delivered
// again: a caller that cannot decide yet must keep the message itself.
//
// Flood publishing is on, and peer scoring carries an application score (Config.AppScore, SetAppScore): a score of
// -1000 or less stops gossip with a peer, -4000 or less graylists it. Bootstrap peers
// (Config.Bootstrap) get 10 on top, and peer exchange is taken only from peers scoring
// at least 10: from bootstrap peers in good standing, not from a fresh peer. The
// IP-colocation penalty is on only when Config.ColocationPenalty is set.
//
// # Addresses
//
// With Config.PublicOnly the host announces (Addrs, identify, its signed peer
// record, its DHT provider records) only addresses others can dial over the
// internet: no loopback, private, link-local or unspecified IP. Its DHT drops such
// addresses from what it learns of others and takes into its routing table only
// peers with a public address, as kad-dht's public filters do. Config.Announce
// addresses are announced as given.
//
// # NAT
//
// Config.AutoNAT runs AutoNAT v2 (peers dial each address back, and the host answers
// their requests); Config.NATService answers AutoNAT v1's probes, from which hosts
// learn whether they are reachable; Config.HolePunching upgrades relayed connections
// to direct ones (DCUtR). With Config.RelayClient a host that AutoNAT finds
// unreachable reserves a slot on its bootstrap peers (circuit relay v2) and announces
// /p2p-circuit addresses through them, so others reach it through a relay; with
// Config.RelayService (RelayLimits) a reachable host relays for others. A circuit with
// a per-circuit limit is a limited connection, over which go-libp2p opens no gossip
// or DHT stream: DefaultRelayLimits sets none and bounds reservations and circuits
// per peer instead. Circuit addresses are built on the relay's public addresses only:
// a relay seen only at private ones gives its clients none. Config.ForceReachability
// takes the place of AutoNAT's verdict (tests on loopback, where AutoNAT cannot tell).
// With a Registerer, the relay service reports go-libp2p's libp2p_relaysvc_* metrics,
// the bytes it relayed among them.
//
// # Emulated links
//
// On an in-memory network (Config.Libp2p, go-libp2p's mocknet) Config.Link emulates a
// home link per host (LinkShape): every byte the host writes on the streams of its own
// protocols (DHT, gossip, fetches) leaves through one uplink shared by all of them,
// first come, first served, and arrives the one-way latency later. What a host
// receives is paced by each sender's uplink only; libp2p's own protocols (identify,
// ping) and protocol negotiation are not shaped. Mocknet's own LinkOptions are left
// unset: its bandwidth is per link, not per host, and its latency is charged on each
// write in turn (a stream of 31 writes of 16 KiB takes 0.8 s over a 50 ms link, not
// 50 ms). On such a host the wire bytes (Bandwidth) are the streams' payload bytes.
//
// All methods of Host are safe for concurrent use.
package p2p
