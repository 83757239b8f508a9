package core

import (
	"fmt"
	"testing"
	"time"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/training/round"
)

// BenchmarkShardEventFullRound is the cost of one shard event while a round that holds
// incentives.MaxContributions complete contributions waits for its deadline (a staked peer
// is silent): what each further message costs when cheap identities have filled the round.
func BenchmarkShardEventFullRound(b *testing.B) {
	self := incentivestest.PeerID("self")
	g := incentives.Genesis{Stakes: []incentives.Stake{{Peer: self, Amount: 1}, {Peer: incentivestest.PeerID("silent"), Amount: 1}}}
	ledger, err := incentives.NewState(incentives.Params{Reward: 1}, g)
	if err != nil {
		b.Fatal(err)
	}
	c, err := New(tinyConfig(self), round.State{Params: tinyTheta()}, ledger)
	if err != nil {
		b.Fatal(err)
	}
	c.SetSigner(Signer{Key: incentivestest.New("capnet", "run").Key("self")})
	own := localDone0(b, c)
	for i := range incentives.MaxContributions - 1 {
		if _, err := c.Shard(capT0, peerShard(own, incentivestest.PeerID(fmt.Sprint("s", i)), 0, 0, 1, ""), nil); err != nil {
			b.Fatal(err)
		}
	}
	if rd, err := c.LocalDone(capT0, 1, tinyTheta()); err != nil || rd.Summary != nil {
		b.Fatalf("round 0 closed early (%v) or %v", rd.Summary != nil, err)
	}
	sh := peerShard(own, incentivestest.PeerID("late"), 1, 0, 2, "")
	b.ResetTimer()
	for range b.N {
		if _, err := c.Shard(capT0.Add(time.Millisecond), sh, nil); err != nil {
			b.Fatal(err)
		}
	}
}
