package core

import (
	"fmt"
	"slices"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/training/round"
	"github.com/lowband/lowband/verify"
)

// Unstaked identities (cheap where the network allows simulated attestation) that each send
// one shard of a contribution they never finish, for as many peers as a round holds, must
// not keep a staked peer's complete contribution out of the round.
func TestUnstakedIdentitiesCannotCrowdOutStakedPeer(t *testing.T) {
	self, staked := incentivestest.PeerID("self"), incentivestest.PeerID("staked")
	ledger, err := incentives.NewState(incentives.Params{Reward: 1}, incentives.Genesis{Stakes: []incentives.Stake{{Peer: self, Amount: 1}, {Peer: staked, Amount: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(tinyConfig(self), round.State{Params: tinyTheta()}, ledger)
	if err != nil {
		t.Fatal(err)
	}
	c.SetSigner(Signer{Key: incentivestest.New("capnet", "run").Key("self")})
	own := localDone0(t, c)
	for i := range incentives.MaxContributions {
		sh := peerShard(own, incentivestest.PeerID(fmt.Sprint("sybil", i)), 0, 0, 2, "")
		if _, err := c.Shard(capT0, sh, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Shard(capT0, peerShard(own, staked, 0, 0, 1, ""), nil); err != nil {
		t.Fatal(err)
	}
	sum := closeRound0(t, c)
	if !slices.Contains(sum.Included, staked) {
		t.Fatalf("the staked peer's contribution was left out: included %d peers, rejected %v", len(sum.Included), sum.Rejected)
	}
}

// localDone0 starts c and ends round 0's local work; it returns c's own first shard, a
// template for peers' shards.
func localDone0(t testing.TB, c *Core) *verify.Shard {
	t.Helper()
	rd, err := c.Start(capT0)
	if err != nil {
		t.Fatal(err)
	}
	if rd, err = c.LocalDone(capT0, 0, rd.Train.Params); err != nil {
		t.Fatal(err)
	}
	sh, err := verify.UnmarshalShard(rd.Publish[0].Data, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return sh
}
