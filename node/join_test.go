package node

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// testLogger logs to stderr when LOWBAND_TEST_LOG is set, else nowhere.
func testLogger() *slog.Logger {
	if os.Getenv("LOWBAND_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// includes reports whether some node of nodes stored a record of round r that includes
// peer.
func includes(t *testing.T, nodes []*Node, r uint64, peer string) bool {
	t.Helper()
	for _, n := range nodes {
		rec, err := n.ledger.st.Record(r)
		if err != nil {
			t.Fatal(err)
		}
		if rec != nil && slices.ContainsFunc(rec.Contributions, func(c incentives.Contribution) bool { return c.Peer == peer }) {
			return true
		}
	}
	return false
}

// TestLateJoinerHoldsTheCanonicalRootAndContributes: four of the five genesis peers train,
// with a checkpoint every other round; after round 10 the fifth starts on an empty home. It
// learns the others' head from their committed records, syncs the checkpoint of the
// root they committed, closes the rounds after it again with the shards it fetches, and
// from the round it joins at holds the others' state root for every round it closes;
// from its first round of local work on, the others include its contributions.
func TestLateJoinerHoldsTheCanonicalRootAndContributes(t *testing.T) {
	// Rounds of five in-process nodes slow down several times over on a loaded 2-core
	// machine: it has taken more than 2 minutes there.
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()
	h, c, _ := newHome(t)
	key, err := h.LoadIdentity()
	if err != nil {
		t.Fatal(err)
	}
	late, err := peer.IDFromPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	spec := func(s *configs.Spec) {
		s.Incentives.Stakes[late.String()] = 100
		s.Training.InnerSteps = 1000
		s.Round = configs.RoundSpec{DeadlineMin: 1, DeadlineMax: 10}
		s.Agreement.CheckpointEvery = 2
	}
	swarm, s, boot := startSwarmWith(t, ctx, 4, spec, nil)
	if err := p2ptest.Poll(ctx, "round 10 closed", 50*time.Millisecond, func() bool { return lowHead(swarm) >= 10 }); err != nil {
		t.Fatal(err)
	}
	c.P2P.Bootstrap = []string{fmt.Sprintf("%s/p2p/%s", boot.host.Addrs()[0], boot.ID())}
	joiner := runNode(t, ctx, Options{Home: h, Config: c, Spec: s, Logger: testLogger()})
	var js *JoinStatus
	if err := p2ptest.Poll(ctx, "the node joined", 50*time.Millisecond, func() bool { js = joiner.Status().Join; return js != nil }); err != nil {
		t.Fatal(err)
	}
	t.Logf("joined at round %d from the checkpoint of round %d, %d rounds replayed, %d bytes in %.2f s", js.Round, js.Checkpoint, js.Replayed, js.Bytes, js.Seconds)
	if js.Round <= 10 || js.Checkpoint == 0 {
		t.Fatalf("joined at round %d from checkpoint %d, want past round 10 from a checkpoint", js.Round, js.Checkpoint)
	}
	last := js.Round + 4
	err = p2ptest.Poll(ctx, "the joiner on the others' roots", 100*time.Millisecond, func() bool {
		if h, ok := head(joiner); !ok || h < last || lowHead(swarm) < last {
			return false
		}
		for r := js.Round; r <= last; r++ {
			if want := majorityRoot(t, swarm, r); want == nil || !bytes.Equal(storedRoot(t, joiner, r), want) {
				return false
			}
		}
		return true
	})
	if err != nil {
		for r := js.Round; r <= last; r++ {
			t.Logf("round %d: joiner %x, others %x", r, storedRoot(t, joiner, r), majorityRoot(t, swarm, r))
			for _, n := range append(swarm, joiner) {
				if rec, _ := n.ledger.st.Record(r); rec != nil {
					var ps []string
					for _, c := range rec.Contributions {
						ps = append(ps, c.Peer[len(c.Peer)-4:])
					}
					t.Logf("  %s: %v, prev %x root %x", n.ID().ShortString(), ps, rec.PrevRoot[:4], rec.NewRoot[:4])
				}
			}
		}
		t.Logf("joiner: %+v", joiner.train.loop.Agreement())
		t.Fatal(err)
	}
	id := joiner.ID().String()
	err = p2ptest.Poll(ctx, "the joiner included", 100*time.Millisecond, func() bool {
		for r := js.Round + 1; r <= lowHead(swarm); r++ {
			if includes(t, swarm, r, id) {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
}
