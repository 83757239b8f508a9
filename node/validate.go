package node

import (
	"context"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/verify"
)

// Reasons a gossip message gets its result, the labels of the verdicts counter. A
// fixed set, so that a peer cannot grow the metric.
const (
	reasonOK      = "ok"      // passed every check the node runs
	reasonSize    = "size"    // over the topic's size cap; not decoded
	reasonDecode  = "decode"  // not a well-formed object of the topic's kind
	reasonNetwork = "network" // signed for another network
	reasonRun     = "run"     // signed for another run of this network
)

// shardEnvelope bounds what a shard adds to its payload (header, signature, framing):
// the size cap of the shards topic is the spec's shard payload limit plus this. verify's
// decoder applies its exact limit after.
const shardEnvelope = 4 << 10

// wireCheck is one topic's check on the bytes alone, needing no model, ledger or
// verifier: pure, cheapest check first. It returns what it decoded (a *verify.Shard,
// *verify.Bundle, *incentives.Record or *incentives.Evidence; nil when refused), the
// result and one of the reasons.
type wireCheck func(data []byte) (any, p2p.Result, string)

// wire holds what the wire checks compare against: the network spec's IDs and limits.
type wire struct {
	network, run string
	maxPayload   int // largest shard payload, from the spec's compression section
}

func wireOf(s *configs.Spec) wire {
	return wire{network: s.NetworkID(), run: s.Run, maxPayload: s.Training.Compression.MaxShardBytes}
}

// checks returns the wire check of every topic kind.
func (w wire) checks() map[string]wireCheck {
	return map[string]wireCheck{
		p2p.KindShards:   w.shard,
		p2p.KindAttest:   w.bundle,
		p2p.KindRecords:  record,
		p2p.KindEvidence: w.evidence,
	}
}

// shardCap is the largest shard encoding the node takes, by gossip or fetch.
func (w wire) shardCap() int { return min(p2p.MaxMessageSize, w.maxPayload+shardEnvelope) }

func (w wire) shard(data []byte) (any, p2p.Result, string) {
	if len(data) > w.shardCap() {
		return nil, p2p.Reject, reasonSize
	}
	s, err := verify.UnmarshalShard(data, w.maxPayload)
	if err != nil {
		return nil, p2p.Reject, reasonDecode
	}
	return scoped(s)(w.scope(s.Header.Network, s.Header.Run))
}

func (w wire) bundle(data []byte) (any, p2p.Result, string) {
	if len(data) > verify.MaxBundleSize {
		return nil, p2p.Reject, reasonSize
	}
	b, err := verify.UnmarshalBundle(data)
	if err != nil {
		return nil, p2p.Reject, reasonDecode
	}
	return scoped(b)(w.scope(b.Network, b.Run))
}

// record checks a commit record. Records name no network or run: the topic does.
func record(data []byte) (any, p2p.Result, string) {
	if len(data) > min(p2p.MaxMessageSize, incentives.MaxRecordSize) {
		return nil, p2p.Reject, reasonSize
	}
	r, err := incentives.DecodeRecord(data)
	if err != nil {
		return nil, p2p.Reject, reasonDecode
	}
	return r, p2p.Accept, reasonOK
}

func (w wire) evidence(data []byte) (any, p2p.Result, string) {
	if len(data) > min(p2p.MaxMessageSize, incentives.MaxEvidenceSize) {
		return nil, p2p.Reject, reasonSize
	}
	e, err := incentives.DecodeEvidence(data)
	if err != nil {
		return nil, p2p.Reject, reasonDecode
	}
	for _, h := range e.Headers {
		if r, reason := w.scope(h.Header.Network, h.Header.Run); r != p2p.Accept {
			return nil, r, reason
		}
	}
	return e, p2p.Accept, reasonOK
}

// scoped returns obj with a scope verdict, or nil when the verdict is not Accept.
func scoped(obj any) func(p2p.Result, string) (any, p2p.Result, string) {
	return func(r p2p.Result, reason string) (any, p2p.Result, string) {
		if r != p2p.Accept {
			return nil, r, reason
		}
		return obj, r, reason
	}
}

// scope accepts what was signed for this network and run.
func (w wire) scope(network, run string) (p2p.Result, string) {
	switch {
	case network != w.network:
		return p2p.Reject, reasonNetwork
	case run != w.run:
		return p2p.Reject, reasonRun
	}
	return p2p.Accept, reasonOK
}

// fullCheck is the check that follows a passed wire check and needs the node's state
// (bundle verified, shard signature by the attested key, content, round window). It is
// the seam for the round loop, which does not exist yet: today every node, and always a
// bootstrap node, runs the wire checks alone. obj is what the wire check decoded. A fullCheck must not block: what it cannot decide yet it keeps (see Stash,
// charged to forwarder) and answers Ignore.
type fullCheck func(ctx context.Context, forwarder peer.ID, data []byte, obj any) (p2p.Result, string)

// validators builds the gossip validator of every topic kind: the wire check, then the
// full check of the kind if full has one, counting each result by kind and reason.
func validators(w wire, full map[string]fullCheck, met *gossipMetrics) map[string]p2p.Validator {
	out := make(map[string]p2p.Validator, len(p2p.Kinds))
	for kind, check := range w.checks() {
		next := full[kind]
		out[kind] = func(ctx context.Context, forwarder peer.ID, data []byte) p2p.Result {
			obj, r, reason := check(data)
			if r == p2p.Accept && next != nil {
				r, reason = next(ctx, forwarder, data, obj)
			}
			met.counted(kind, r, reason)
			return r
		}
	}
	return out
}
