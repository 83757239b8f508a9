package node

import (
	"context"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// TestSilentAdversaryNeverHoldsRoundsAndEarnsNothing: three honest loops and a fourth,
// staked like them, running the silent adversary (it trains, attests and hears everyone,
// but never publishes a shard). Until the honest nodes have 8 arrival delays a round
// waits for the spec's maximum, then only for the adaptive deadline (here its minimum),
// never longer; the silent node is in no round's aggregate, and every honest ledger gives
// it no reward.
func TestSilentAdversaryNeverHoldsRoundsAndEarnsNothing(t *testing.T) {
	keys := []crypto.PrivKey{p2ptest.Key(), p2ptest.Key(), p2ptest.Key(), p2ptest.Key()}
	stakes := map[string]uint64{}
	ids := make([]string, len(keys))
	for i, k := range keys {
		id, _ := peer.IDFromPrivateKey(k)
		ids[i] = id.String()
		stakes[ids[i]] = 100
	}
	silent := ids[3]
	s := syntheticSpec(t, stakes)
	s.Round = configs.RoundSpec{DeadlineMin: 2, DeadlineMax: 20}
	s.Testing.AllowAdversaries = true
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	clk := newFakeClock()
	b := &bus{bundles: map[[32]byte][]byte{}, max: s.Training.Compression.MaxShardBytes}
	var hs []*loopHarness
	for _, k := range keys {
		hs = append(hs, newLoopHarness(t, s, k, clk, b))
	}
	cfg, _ := configs.Default(configs.ProfileLocal)
	a, err := newAdversary(AdvSilent, keys[3], s, cfg.Attest, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a.install(hs[3].l)
	for _, h := range hs {
		h.run(t, ctx)
	}
	honest := hs[:3]
	const rounds = 10
	start := clk.Now()
	for closed := uint64(0); closed < rounds; {
		waitFor(t, ctx, func() bool {
			for _, h := range honest {
				if v := h.l.View(); v.NextLocal != v.NextClose+2 || h.l.inboxDepth() > 0 {
					return false
				}
			}
			return true
		})
		clk.advance(ctx, time.Second)
		clk.advance(ctx, 0)
		closed = honest[0].l.View().NextClose
	}
	waitFor(t, ctx, func() bool {
		for _, h := range honest {
			if len(h.l.prog.status().Rounds) < rounds {
				return false
			}
		}
		return true
	})
	var deadlines []float64
	for _, rs := range honest[0].l.prog.status().Rounds[:rounds] {
		deadlines = append(deadlines, rs.DeadlineS)
	}
	if deadlines[0] != s.Round.DeadlineMax || deadlines[rounds-1] != s.Round.DeadlineMin {
		t.Fatalf("deadlines by round %v: want %v first, %v once 8 delays are known", deadlines, s.Round.DeadlineMax, s.Round.DeadlineMin)
	}
	if took := clk.Now().Sub(start); took > 40*time.Second {
		t.Fatalf("%d rounds took %v of the clock; deadlines %v", rounds, took, deadlines)
	}
	for i, h := range honest {
		h.mu.Lock()
		last := h.commits[len(h.commits)-1]
		for _, c := range h.commits {
			for _, k := range c.Record.Contributions {
				if k.Peer == silent {
					t.Errorf("node %d: round %d aggregated the silent node", i, c.Record.Round)
				}
			}
		}
		h.mu.Unlock()
		if acc := last.State.Account(silent); acc.Balance != 0 || acc.Contributions != 0 {
			t.Errorf("node %d: the silent node earned %d for %d contributions", i, acc.Balance, acc.Contributions)
		}
		if acc := last.State.Account(ids[i]); acc.Balance == 0 {
			t.Errorf("node %d earned nothing", i)
		}
	}
	t.Logf("deadline by round: %v; %d rounds in %v", deadlines, rounds, clk.Now().Sub(start))
}
