package node

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/node/attest"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
	"github.com/lowband/lowband/verify"
)

// TestNothingThatFailedValidationIsAggregated: beside three honest nodes, a peer with a
// valid sim bundle publishes, each round, a signed shard whose payload fails the content
// check, and a shard of another peer signed by a key no bundle attests (with an honest
// node's payload, which the round would aggregate if the shard got through). No record any honest node
// commits lists a contribution of that peer, the honest nodes keep one root, and the
// invalid content becomes evidence that slashes it.
func TestNothingThatFailedValidationIsAggregated(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	swarm, s, boot := startSwarmAt(t, ctx, 3)
	key := p2ptest.Key()
	bad, err := peer.IDFromPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cfg := p2ptest.Config(key)
	cfg.Network, cfg.Run = s.NetworkID(), s.Run
	cfg.Bootstrap = []peer.AddrInfo{boot.host.AddrInfo()}
	h, err := p2p.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// The bad peer copies honest payloads: well-formed contributions that would be
	// aggregated if a shard under an unattested key got through.
	var honest atomic.Pointer[[]byte]
	for _, kind := range []string{p2p.KindShards, p2p.KindAttest} {
		sub, err := h.Subscribe(kind)
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Cancel()
		go func() {
			for {
				m, err := sub.Next(ctx)
				if err != nil {
					return
				}
				if sh, err := verify.UnmarshalShard(m.Data, s.Training.Compression.MaxShardBytes); err == nil && sh.Header.Peer != bad.String() {
					honest.Store(&sh.Payload)
				}
			}
		}()
	}
	if err := p2ptest.Poll(ctx, "the bad peer on every node's topics", 20*time.Millisecond, func() bool {
		for _, n := range swarm {
			if !slices.Contains(n.host.TopicPeers(p2p.KindShards), bad) || !slices.Contains(n.host.TopicPeers(p2p.KindAttest), bad) {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	b, err := attest.Attest(ctx, attest.NewSimProducer(attest.DevnetSimRoot(), make([]byte, verify.MeasurementSize)), s.NetworkID(), s.Run, key, 0, pub)
	if err != nil {
		t.Fatal(err)
	}
	bundle, _ := b.Marshal()
	hash := b.Hash()
	// Another peer, whose shards name a bundle nobody has.
	_, stray, _ := ed25519.GenerateKey(rand.Reader)
	other := testPeerID(t)
	strayHash := [32]byte{1}

	rounds := swarm[0].train.loop.View().NextLocal + 8
	for sent := uint64(0); ; {
		v := swarm[0].train.loop.View()
		if v.NextClose >= rounds {
			break
		}
		// Rounds of the synthetic task are short: aim at the next round too.
		for r := max(v.NextLocal, sent); r <= v.NextLocal+1; r++ {
			if err := h.Publish(ctx, p2p.KindAttest, bundle); err != nil {
				t.Fatal(err)
			}
			hd := verify.ShardHeader{Network: s.NetworkID(), Run: s.Run, Round: r, Peer: bad.String(), Count: 1, BundleHash: hash[:]}
			junk, _ := verify.SignShard(priv, hd, []byte("not a compressed message"))
			hd.BundleHash, hd.Peer = strayHash[:], other
			payload := []byte("unattested")
			if p := honest.Load(); p != nil {
				payload = *p
			}
			unattested, _ := verify.SignShard(stray, hd, payload)
			for _, sh := range []*verify.Shard{junk, unattested} {
				data, err := sh.Marshal()
				if err != nil {
					t.Fatal(err)
				}
				if err := h.Publish(ctx, p2p.KindShards, data); err != nil {
					t.Fatal(err)
				}
			}
			sent = r + 1
		}
		select {
		case <-ctx.Done():
			t.Fatal("the swarm did not close the rounds in time")
		case <-time.After(20 * time.Millisecond):
		}
	}
	waitFor(t, ctx, func() bool {
		for _, n := range swarm {
			if n.train.loop.View().NextClose < rounds {
				return false
			}
		}
		return true
	})
	waitSlashed(t, ctx, swarm, bad.String())
	// Evidence may land in different rounds' records on different nodes (agreement on
	// roots is not built), so the ledgers may differ; θ may not: the model roots match.
	for r := uint64(0); r < rounds; r++ {
		var model []byte
		for _, n := range swarm {
			rec, err := n.ledger.st.Record(r)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range rec.Contributions {
				if c.Peer == bad.String() || c.Peer == other {
					t.Fatalf("%s: round %d aggregated a contribution of %s, whose shards failed validation", n.ID(), r, c.Peer)
				}
			}
			if len(rec.Contributions) != 3 {
				t.Errorf("%s: round %d lists %d contributions, want the 3 honest ones", n.ID(), r, len(rec.Contributions))
			}
			if model == nil {
				model = rec.ModelRoot
			} else if !bytes.Equal(rec.ModelRoot, model) {
				t.Errorf("%s: another model root after round %d", n.ID(), r)
			}
		}
	}
}

// waitSlashed waits until every node's ledger penalised the peer.
func waitSlashed(t *testing.T, ctx context.Context, swarm []*Node, bad string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := p2ptest.Poll(ctx, "evidence against the bad peer committed", 50*time.Millisecond, func() bool {
		for _, n := range swarm {
			if !slices.Contains(n.trainingStatus().Slashed, bad) {
				return false
			}
		}
		return true
	}); err != nil {
		for _, n := range swarm {
			st := n.trainingStatus()
			ev := 0
			for _, r := range st.Rounds {
				ev += r.Evidence
			}
			t.Logf("%s slashed %v, evidence in records %d", n.ID(), st.Slashed, ev)
			for _, l := range strings.Split(string(get(t, "http://"+n.APIAddr()+"/metrics")), "\n") {
				if strings.HasPrefix(l, "lowband_node_gossip") {
					t.Log(l)
				}
			}
		}
		t.Fatal(err)
	}
}
