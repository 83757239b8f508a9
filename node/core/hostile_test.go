package core

import (
	"errors"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/training/round"
	"github.com/lowband/lowband/verify"
)

// tinyCore is a core of the tiny model, staked alone, that has done round 0's local work;
// it returns the core and its own first shard, a template for peers' shards.
func tinyCore(t *testing.T) (*Core, *verify.Shard) {
	t.Helper()
	self := incentivestest.PeerID("self")
	ledger, err := incentives.NewState(incentives.Params{Reward: 1}, incentives.Genesis{Stakes: []incentives.Stake{{Peer: self, Amount: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(tinyConfig(self), round.State{Params: tinyTheta()}, ledger)
	if err != nil {
		t.Fatal(err)
	}
	c.SetSigner(Signer{Key: incentivestest.New("capnet", "run").Key("self")})
	rd, err := c.Start(capT0)
	if err != nil {
		t.Fatal(err)
	}
	rd, err = c.LocalDone(capT0, 0, rd.Train.Params)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := verify.UnmarshalShard(rd.Publish[0].Data, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	return c, sh
}

// A shard whose index is not below its count is refused, whatever else arrived: the
// contribution would otherwise count as whole with a slot missing.
func TestShardIndexPastCountRefused(t *testing.T) {
	c, own := tinyCore(t)
	peer := incentivestest.PeerID("p")
	for _, idx := range []uint32{0, 5} {
		sh := *own
		sh.Header.Peer, sh.Header.Index, sh.Header.Count = peer, idx, 2
		_, err := c.Shard(capT0, &sh, nil)
		if idx == 0 && err != nil {
			t.Fatal(err)
		}
		if idx == 5 && !errors.Is(err, ErrShard) {
			t.Fatalf("shard 5 of 2: %v, want ErrShard", err)
		}
	}
}

// Nil inputs are refused with an error, not a panic.
func TestNilShardAndEvidenceRefused(t *testing.T) {
	c, _ := tinyCore(t)
	if _, err := c.Shard(capT0, nil, nil); !errors.Is(err, ErrShard) {
		t.Fatalf("nil shard: %v", err)
	}
	if _, err := c.Evidence(nil); err == nil {
		t.Fatal("nil evidence accepted")
	}
}
