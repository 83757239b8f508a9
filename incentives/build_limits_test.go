package incentives_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/verify"
)

// wideParams are testParams with a window long enough for deferred evidence to wait.
func wideGenesis(t testing.TB, window uint64) *incentives.State {
	t.Helper()
	p, g := testParams()
	p.EvidenceWindow = window
	st, err := incentives.NewState(p, g)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// floodEvidence is n valid pieces of evidence, each about a different offence.
func floodEvidence(fx *incentivestest.Fixture, n int) []incentives.Evidence {
	out := make([]incentives.Evidence, 0, n)
	for i := range n {
		out = append(out, *fx.Equivocation("B", 0, uint32(i), "x"))
	}
	return out
}

// TestBuildWithTenTimesTheEvidenceLimitDefersTheRest: one cheap peer flooding valid
// evidence cannot stop a round from closing. Build includes exactly the limit, defers the
// rest, and the following rounds include every deferred item.
func TestBuildWithTenTimesTheEvidenceLimitDefersTheRest(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	chk := incentives.NewCheckCache(fx.Checker(), 4096)
	st := wideGenesis(t, 20)
	pending := floodEvidence(fx, 10*incentives.MaxEvidencePerRecord)
	penalised := 0
	for rounds := 1; len(pending) > 0; rounds++ {
		if rounds > 10 {
			t.Fatalf("%d items still deferred after 10 rounds", len(pending))
		}
		cl, err := st.Build(nil, pending, []byte("m"), chk)
		if err != nil {
			t.Fatalf("round %d: Build with %d valid items: %v", st.Round, len(pending), err)
		}
		if got := len(cl.Record.Evidence); got != incentives.MaxEvidencePerRecord {
			t.Fatalf("round %d: %d items included, want the limit %d", st.Round, got, incentives.MaxEvidencePerRecord)
		}
		if len(cl.Deferred) != len(pending)-incentives.MaxEvidencePerRecord {
			t.Fatalf("round %d: %d deferred, want %d", st.Round, len(cl.Deferred), len(pending)-incentives.MaxEvidencePerRecord)
		}
		for _, e := range cl.Events {
			if e.Kind == incentives.EventPenalty {
				penalised++
			}
		}
		st, pending = cl.State, cl.Deferred
	}
	if penalised != 10*incentives.MaxEvidencePerRecord {
		t.Fatalf("%d offences penalised, want %d", penalised, 10*incentives.MaxEvidencePerRecord)
	}
}

// TestBuildIsTheSameRecordInAnyArrivalOrder: two nodes holding the same evidence, more
// than fits, build the same record and defer the same items.
func TestBuildIsTheSameRecordInAnyArrivalOrder(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	chk := incentives.NewCheckCache(fx.Checker(), 4096)
	st := wideGenesis(t, 20)
	ev := floodEvidence(fx, 3*incentives.MaxEvidencePerRecord)
	want, err := st.Build(nil, ev, []byte("m"), chk)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		rng.Shuffle(len(ev), func(i, j int) { ev[i], ev[j] = ev[j], ev[i] })
		got, err := st.Build(nil, ev, []byte("m"), chk)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Record.Marshal(), want.Record.Marshal()) {
			t.Fatal("another arrival order built another record")
		}
	}
}

// bigContent is invalid-content evidence whose payload is a maximal shard.
func bigContent(fx *incentivestest.Fixture, peer string, round uint64, index uint32) incentives.Evidence {
	payload := append([]byte("bad"), make([]byte, 512<<10-3)...)
	payload[len(payload)-1] = byte(index)
	b := fx.Bundle(peer, "")
	return *incentives.NewInvalidContent(b, fx.Shard(peer, b, round, index, payload))
}

// TestBuildFromMaximalInputsFitsOneGossipMessage: with the most contributions a record
// holds and more (and larger) evidence than fits, Build writes a record that DecodeRecord
// accepts and that fits one gossip message.
func TestBuildFromMaximalInputsFitsOneGossipMessage(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	chk := incentives.NewCheckCache(fx.Checker(), 4096)
	st := wideGenesis(t, 20)
	contribs := maximalContributions(t)
	ev := floodEvidence(fx, 2*incentives.MaxEvidencePerRecord)
	for i := range 4 {
		ev = append(ev, bigContent(fx, pid("D"), 0, uint32(i)))
	}
	for range 3 {
		cl, err := st.Build(contribs, ev, bytes.Repeat([]byte{1}, incentives.MaxRootSize), chk)
		if err != nil {
			t.Fatalf("Build: %v", err)
		}
		enc := cl.Record.Marshal()
		if len(enc) > p2p.MaxMessageSize {
			t.Fatalf("record is %d bytes, over the gossip cap %d", len(enc), p2p.MaxMessageSize)
		}
		if _, err := incentives.DecodeRecord(enc); err != nil {
			t.Fatalf("DecodeRecord of Build's record: %v", err)
		}
		st, ev = cl.State, cl.Deferred
	}
}

// TestMaxRecordSizeFitsOneGossipMessage: a record the decoder accepts can be gossiped.
func TestMaxRecordSizeFitsOneGossipMessage(t *testing.T) {
	if incentives.MaxRecordSize > p2p.MaxMessageSize {
		t.Fatalf("MaxRecordSize %d is over the gossip cap %d", incentives.MaxRecordSize, p2p.MaxMessageSize)
	}
	if incentives.MaxEvidenceSize+incentives.MaxContributionsSize > incentives.MaxRecordSize-1024 {
		t.Fatal("a record of maximal contributions has no room for one maximal evidence item")
	}
}

// maximalContributions is the largest inclusion list a record takes: as many one-shard
// contributions as fit MaxContributionsSize (or MaxContributions, whichever is less).
func maximalContributions(t testing.TB) []incentives.Contribution {
	t.Helper()
	var cs []incentives.Contribution
	size := 3 // the list's own header
	for i := 0; i < incentives.MaxContributions; i++ {
		c := incentives.Contribution{Peer: testPeer(i), Shards: [][]byte{verify.PayloadCID([]byte{byte(i), byte(i >> 8)})}}
		n := len(c.Peer) + len(c.Shards[0]) + 8
		if size+n > incentives.MaxContributionsSize {
			break
		}
		size += n
		cs = append(cs, c)
	}
	return cs
}
