package core

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/aggregate"
	"github.com/lowband/lowband/training/compress"
	"github.com/lowband/lowband/training/round"
	"github.com/lowband/lowband/verify"
)

var capT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func tinyConfig(self string) Config {
	fx := incentivestest.New("capnet", "run")
	return Config{
		Self: self, Network: "capnet", Run: "run", Checker: fx.Checker(),
		Round: round.Config{Self: self, Weight: 1, Delay: 1, OuterLR: 0.5,
			Compress:  compress.Config{RankMin: 1, RankMax: 1, MinLowRank: 1 << 20, MaxShardBytes: compress.MinShardBytes},
			Aggregate: aggregate.Config{Method: aggregate.Mean}},
		Deadline: DeadlineConfig{Quorum: 0.67, Min: time.Second, Max: time.Minute, K: 3},
	}
}

func tinyTheta() []training.Tensor {
	return []training.Tensor{{Name: "v", Shape: []int{4}, Data: []float64{1, 2, 3, 4}}}
}

// More contributions than a record lists: the ones with the most voting power (then by peer
// ID) are aggregated and listed, the rest counted under "cap".
func TestInclusionCappedByPowerThenPeer(t *testing.T) {
	n := incentives.MaxContributions // peers besides this node: one too many with it
	peers := make([]string, n)
	var g incentives.Genesis
	for i := range peers {
		peers[i] = incentivestest.PeerID(fmt.Sprint("p", i))
		g.Stakes = append(g.Stakes, incentives.Stake{Peer: peers[i], Amount: 1000 + uint64(i)})
	}
	self := incentivestest.PeerID("self")
	g.Stakes = append(g.Stakes, incentives.Stake{Peer: self, Amount: 1 << 20})
	ledger, err := incentives.NewState(incentives.Params{Reward: 1}, g)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(tinyConfig(self), round.State{Params: tinyTheta()}, ledger)
	if err != nil {
		t.Fatal(err)
	}
	fx := incentivestest.New("capnet", "run")
	c.SetSigner(Signer{Key: fx.Key("self")})
	rd, err := c.Start(capT0)
	if err != nil {
		t.Fatal(err)
	}
	step := func(st *round.Start) []training.Tensor {
		out := training.Tensor{Name: "v", Shape: []int{4}, Data: slices.Clone(st.Params[0].Data)}
		out.Data[0] += 0.5
		return []training.Tensor{out}
	}
	rd, err = c.LocalDone(capT0, 0, step(rd.Train))
	if err != nil || len(rd.Publish) != 1 {
		t.Fatalf("own contribution: %d messages, %v", len(rd.Publish), err)
	}
	own, err := verify.UnmarshalShard(rd.Publish[0].Data, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range peers { // every peer sends the same one-shard contribution, unsigned (Core trusts its caller)
		sh := *own
		sh.Header.Peer = p
		if _, err := c.Shard(capT0, &sh, nil); err != nil {
			t.Fatal(err)
		}
	}
	rd, err = c.LocalDone(capT0, 1, step(rd.Train))
	if err != nil {
		t.Fatal(err)
	}
	if rd.Summary == nil {
		t.Fatal("round 0 did not close with every contribution in")
	}
	sum := rd.Summary
	if len(sum.Included) != incentives.MaxContributions || sum.Rejected[ReasonCap] != 1 {
		t.Fatalf("included %d, rejected %v", len(sum.Included), sum.Rejected)
	}
	if slices.Contains(sum.Included, peers[0]) || !slices.Contains(sum.Included, self) {
		t.Fatal("the cap left out another peer than the one with the least power")
	}
	if len(rd.Commit.Record.Contributions) != incentives.MaxContributions {
		t.Fatalf("the record lists %d contributions", len(rd.Commit.Record.Contributions))
	}
}

// contributionSize is the exact size of an inclusion list entry in a record's encoding, and
// droppedSize what the Dropped flag adds to it.
func TestContributionSizeMatchesRecordEncoding(t *testing.T) {
	empty := (&incentives.Record{}).Marshal()
	for _, k := range []int{1, 23, 24, 255, 256} {
		c := incentives.Contribution{Peer: incentivestest.PeerID("a")}
		for i := range k {
			c.Shards = append(c.Shards, verify.PayloadCID(fmt.Append(nil, i)))
		}
		rec := &incentives.Record{Contributions: []incentives.Contribution{c}}
		if got, want := contributionSize(c.Peer, c.Shards), len(rec.Marshal())-len(empty); got != want {
			t.Fatalf("%d shards: size %d, encoding adds %d", k, got, want)
		}
		rec.Contributions[0].Dropped = true
		if got, want := contributionSize(c.Peer, c.Shards)+droppedSize, len(rec.Marshal())-len(empty); got != want {
			t.Fatalf("%d shards, dropped: size %d, encoding adds %d", k, got, want)
		}
	}
}
