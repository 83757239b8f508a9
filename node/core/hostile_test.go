package core

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/training/round"
	"github.com/lowband/lowband/verify"
)

// tinyCore is a core of the tiny model, staked alone, that has done round 0's local work;
// it returns the core and its own first shard, a template for peers' shards.
func tinyCore(t *testing.T) (*Core, *verify.Shard) {
	t.Helper()
	return tinyCoreStaked(t)
}

// tinyCoreStaked is tinyCore with the fixture's peers named in others staked as well.
func tinyCoreStaked(t *testing.T, others ...string) (*Core, *verify.Shard) {
	t.Helper()
	self := incentivestest.PeerID("self")
	stakes := []incentives.Stake{{Peer: self, Amount: 1}}
	for _, o := range others {
		stakes = append(stakes, incentives.Stake{Peer: incentivestest.PeerID(o), Amount: 1})
	}
	ledger, err := incentives.NewState(incentives.Params{Reward: 1}, incentives.Genesis{Stakes: stakes})
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

// peerShard is a copy of template as shard index of count of peer p for round r.
func peerShard(template *verify.Shard, p string, r uint64, index, count uint32, payload string) *verify.Shard {
	sh := *template
	sh.Header.Peer, sh.Header.Round, sh.Header.Index, sh.Header.Count = p, r, index, count
	if payload != "" {
		sh.Payload = []byte(payload)
		sh.Header.PayloadCID = verify.PayloadCID(sh.Payload)
	}
	return &sh
}

func kinds(ms []Message, kind string) int {
	n := 0
	for _, m := range ms {
		if m.Kind == kind {
			n++
		}
	}
	return n
}

// closeRound0 finishes round 1's local work and ticks past the deadline; it returns the
// summary of round 0.
func closeRound0(t *testing.T, c *Core) *Summary {
	t.Helper()
	rd, err := c.LocalDone(capT0, 1, tinyTheta())
	if err != nil {
		t.Fatal(err)
	}
	if rd.Summary == nil {
		if rd, err = c.Tick(capT0.Add(time.Hour)); err != nil || rd.Summary == nil {
			t.Fatalf("round 0 did not close: %v", err)
		}
	}
	return rd.Summary
}

// Three different shards for one slot make one evidence item, published once.
func TestEquivocationPublishedOnce(t *testing.T) {
	c, own := tinyCore(t)
	p := incentivestest.PeerID("p")
	var published int
	for _, payload := range []string{"", "second", "third"} {
		rd, err := c.Shard(capT0, peerShard(own, p, 0, 0, 2, payload), nil)
		if err != nil {
			t.Fatal(err)
		}
		published += kinds(rd.Publish, KindEvidence)
	}
	if published != 1 || len(c.pending) != 1 {
		t.Fatalf("%d evidence messages, %d pending; want 1, 1", published, len(c.pending))
	}
	if sum := closeRound0(t, c); sum.Rejected[ReasonEquivocation] != 1 {
		t.Fatalf("rejected %v", sum.Rejected)
	}
}

// Shards of one peer and round that disagree on their count drop its contribution, with no
// evidence: no single header proves it.
func TestShardCountMismatchDropsWithoutEvidence(t *testing.T) {
	c, own := tinyCore(t)
	p := incentivestest.PeerID("p")
	for i, count := range []uint32{2, 3, 3} {
		rd, err := c.Shard(capT0, peerShard(own, p, 0, uint32(i), count, ""), nil)
		if err != nil || kinds(rd.Publish, KindEvidence) != 0 {
			t.Fatalf("shard %d of %d: %d evidence, %v", i, count, kinds(rd.Publish, KindEvidence), err)
		}
	}
	sum := closeRound0(t, c)
	if sum.Rejected[ReasonIncomplete] != 1 || len(sum.Included) != 1 || sum.Evidence != 0 {
		t.Fatalf("included %v, rejected %v, evidence %d", sum.Included, sum.Rejected, sum.Evidence)
	}
}

// Shards for a closed round, or past the window, are ignored without an error and hold
// nothing.
func TestShardsOutsideOpenRoundsIgnored(t *testing.T) {
	c, own := tinyCore(t)
	closeRound0(t, c)
	p := incentivestest.PeerID("p")
	v := c.View()
	for _, r := range []uint64{0, v.NextLocal + v.Window + 1} {
		rd, err := c.Shard(capT0, peerShard(own, p, r, 0, 1, ""), nil)
		if err != nil || len(rd.Publish) != 0 || rd.Summary != nil {
			t.Fatalf("shard for round %d: %+v, %v", r, rd, err)
		}
		if _, held := c.rounds[r]; held {
			t.Fatalf("shard for round %d held", r)
		}
	}
}

// Pending evidence is bounded: past the bound the oldest against the same peer goes.
func TestPendingEvidenceBounded(t *testing.T) {
	c, _ := tinyCore(t)
	c.cfg.MaxPendingEvidence = 2
	fx := incentivestest.New("capnet", "run")
	var evs []*incentives.Evidence
	for i := range 3 {
		e := fx.Equivocation("p", 0, uint32(i), "v")
		evs = append(evs, e)
		if _, err := c.Evidence(e); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Evidence(e); err != nil { // again: no change
			t.Fatal(err)
		}
	}
	if len(c.pending) != 2 || c.pending[0].ID() != evs[1].ID() || c.pending[1].ID() != evs[2].ID() {
		t.Fatalf("pending %d items, want the two newest", len(c.pending))
	}
}

// View gives the epoch of the local work's round by the checker's epoch length.
func TestViewEpochFromChecker(t *testing.T) {
	self := incentivestest.PeerID("self")
	cfg := tinyConfig(self)
	chk := incentivestest.New("capnet", "run").Checker()
	chk.EpochRounds = 2
	cfg.Checker = chk
	ledger, err := incentives.NewState(incentives.Params{}, incentives.Genesis{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(cfg, round.State{Round: 5, Params: tinyTheta()}, func() *incentives.State { ledger.Round = 5; return ledger }())
	if err != nil {
		t.Fatal(err)
	}
	if v := c.View(); len(v.Voters) != 0 || v.NextClose != 5 || v.NextLocal != 5 || v.Window != 1 || v.Epoch != 2 || v.RepairFrom != 2 {
		t.Fatalf("view %+v", v)
	}
}

// Shard equivocation evidence reaching a node that holds only one of the two shards
// leaves the equivocator's contribution out of a round not closed yet, whether its shard
// came before the evidence or after; without the evidence the contribution counts.
// Evidence of a closed round, or of one past the window, holds nothing.
func TestShardEquivocationEvidenceLeavesTheContributionOut(t *testing.T) {
	fx := incentivestest.New("capnet", "run")
	p := incentivestest.PeerID("p")
	for _, tc := range []struct {
		name     string
		evidence []bool // given before the shard, after it
	}{{"none", []bool{false, false}}, {"before", []bool{true, false}}, {"after", []bool{false, true}}} {
		t.Run(tc.name, func(t *testing.T) {
			c, own := tinyCoreStaked(t, "p")
			give := func() {
				if _, err := c.Evidence(fx.Equivocation("p", 0, 0, "v")); err != nil {
					t.Fatal(err)
				}
			}
			if tc.evidence[0] {
				give()
			}
			if _, err := c.Shard(capT0, peerShard(own, p, 0, 0, 1, ""), nil); err != nil {
				t.Fatal(err)
			}
			if tc.evidence[1] {
				give()
			}
			sum := closeRound0(t, c)
			dropped := tc.evidence[0] || tc.evidence[1]
			if slices.Contains(sum.Included, p) == dropped || (sum.Rejected[ReasonEquivocation] == 1) != dropped {
				t.Fatalf("included %v, rejected %v", sum.Included, sum.Rejected)
			}
		})
	}
	c, _ := tinyCore(t)
	closeRound0(t, c)
	v := c.View()
	for _, r := range []uint64{0, v.NextLocal + v.Window + 1} {
		if _, err := c.Evidence(fx.Equivocation("p", r, 0, "v")); err != nil {
			t.Fatal(err)
		}
		if _, held := c.rounds[r]; held {
			t.Fatalf("evidence of round %d made an assembly", r)
		}
	}
}
