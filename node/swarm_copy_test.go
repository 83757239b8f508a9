package node

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
)

// TestSwarmFreeRideCopy: five nodes on loopback aggregating with filtered_mean, one a
// free-ride-copy node, which sends in each round, under its own name and epoch key, the
// payloads of another peer's contribution to the round. On the four honest nodes: every
// round that lists the copier lists under it exactly the CIDs of another peer's entry;
// nobody is penalised (a copy is well signed and well formed, and one payload in two
// peers' slots is no offence anyone can prove); all end on one state root and one ledger
// root; their held-out loss falls. And the copier earns: it is rewarded for each round
// that lists it as its victim is (a known weakness: nothing in the rules tells a copy from
// the work it copies; see docs/architecture.md, Known weaknesses).
func TestSwarmFreeRideCopy(t *testing.T) {
	const rounds = 6
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	swarm := startAdvSwarm(t, ctx, []string{AdvCopy, "", "", "", ""}, configs.AggregationSpec{Method: "filtered_mean"})
	trainCtx, cancelTrain := context.WithTimeout(ctx, 90*time.Second)
	defer cancelTrain()
	trainRounds(t, trainCtx, swarm, rounds)
	settleCtx, cancelSettle := context.WithTimeout(ctx, 30*time.Second)
	defer cancelSettle()
	honest := swarm[1:]
	hr := settled(settleCtx, honest, rounds)
	checkOneRoot(t, honest, hr)
	cp := swarm[0].ID().String()
	copied := 0
	for i, n := range honest {
		if s := n.trainingStatus().Slashed; len(s) != 0 {
			t.Errorf("%s penalised %v", n.ID(), s)
		}
		for _, r := range hr[i] {
			rec, err := n.ledger.st.Record(r.Round)
			if err != nil {
				t.Fatal(err)
			}
			j := slices.IndexFunc(rec.Contributions, func(e incentives.Contribution) bool { return e.Peer == cp })
			if j < 0 {
				continue
			}
			mine := rec.Contributions[j].Shards
			victim := slices.IndexFunc(rec.Contributions, func(e incentives.Contribution) bool {
				return e.Peer != cp && slices.EqualFunc(e.Shards, mine, bytes.Equal)
			})
			if victim < 0 {
				t.Errorf("%s: round %d lists the copier with CIDs no other entry has", n.ID(), r.Round)
				continue
			}
			if i == 0 {
				copied++
				t.Logf("round %d: the copier's entry is %s's payload (dropped %v, the victim's %v)", r.Round,
					shortIDs([]string{rec.Contributions[victim].Peer})[0], rec.Contributions[j].Dropped, rec.Contributions[victim].Dropped)
			}
		}
		first, last := *n.trainingStatus().InitialLoss, *hr[i][len(hr[i])-1].Loss
		if !(last < first) {
			t.Errorf("%s: honest held-out loss %.4f -> %.4f after %d rounds", n.ID(), first, last, rounds)
		}
	}
	if copied == 0 {
		t.Fatal("no round listed the copier: nothing was checked")
	}
	l := honest[0].ledger.state.Load()
	earned := l.Account(cp)
	var sum uint64
	for _, h := range honest {
		sum += l.Account(h.ID().String()).Balance
	}
	t.Logf("the copier, listed in %d of %d rounds, earned %d for %d contributions; an honest peer %d on average",
		copied, rounds, earned.Balance, earned.Contributions, sum/uint64(len(honest)))
	if c := swarm[0].trainingStatus().Rounds; len(c) >= rounds {
		t.Logf("the copier's own root of round %d: %.12s, the honest nodes' %.12s", rounds-1, c[rounds-1].StateRoot, hr[0][rounds-1].StateRoot)
	}
	if earned.Contributions == 0 {
		t.Errorf("the copier earned nothing: the rules now tell a copy apart (update this test and the docs)")
	}
}
