package store

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/verify"
)

func TestReplayDir(t *testing.T) {
	dir := t.TempDir()
	fx := incentivestest.New("testnet", "run-1")
	chk := fx.Checker()
	s, err := Open(filepath.Join(dir, "store.db"), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g := testGenesis(t)
	if err := s.Init(g); err != nil {
		t.Fatal(err)
	}
	var last *incentives.State
	for range 6 {
		if last, err = commitRound(s, fx, chk); err != nil {
			t.Fatal(err)
		}
	}
	recs := filepath.Join(dir, "records")
	if n, err := s.ExportRecords(recs); err != nil || n != 6 {
		t.Fatalf("export: %d %v", n, err)
	}
	st, n, err := ReplayDir(recs, g, chk)
	if err != nil || n != 6 || !st.Equal(last) {
		t.Fatalf("replay: %d records, %v", n, err)
	}
	// A missing round is named.
	if err := os.Remove(filepath.Join(recs, "round-00000000000000000002.rec")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReplayDir(recs, g, chk); err == nil {
		t.Fatal("replay with a missing round succeeded")
	}
	// A damaged file is named and refused.
	if err := os.WriteFile(filepath.Join(recs, "round-00000000000000000002.rec"), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReplayDir(recs, g, chk); !errors.Is(err, incentives.ErrMalformed) {
		t.Fatalf("replay with a damaged file: %v", err)
	}
}

// TestReplayWithSpecChecker: records whose evidence is signed under devnet sim bundles
// replay with the checker built from the devnet spec, as `lowband ledger replay` does.
func TestReplayWithSpecChecker(t *testing.T) {
	spec, err := configs.ParseSpec("devnet", configs.DevnetSpec)
	if err != nil {
		t.Fatal(err)
	}
	spec.Incentives = configs.IncentivesSpec{Reward: 5, JailRounds: 1, UnstakedWeight: 1, EvidenceWindow: 2,
		Penalties: configs.PenaltySpec{Equivocation: 3}}
	genesis, err := GenesisFromSpec(spec.Incentives)
	if err != nil {
		t.Fatal(err)
	}
	chk, err := CheckerFromSpec(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	seed := configs.DevnetSimRootSeed()
	eph := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, 32))
	b, err := verify.NewSimBundle(ed25519.NewKeyFromSeed(seed[:]), bytes.Repeat([]byte{1}, verify.MeasurementSize),
		spec.NetworkID(), spec.Run, testID("P"), 0, eph.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	bundle, _ := b.Marshal()
	bh := b.Hash()
	sign := func(payload string) incentives.SignedHeader {
		h := verify.ShardHeader{Network: spec.NetworkID(), Run: spec.Run, Round: 0, Peer: testID("P"), Count: 1, BundleHash: bh[:]}
		s, err := verify.SignShard(eph, h, []byte(payload))
		if err != nil {
			t.Fatal(err)
		}
		return incentives.SignedHeader{Header: s.Header, Sig: s.Sig}
	}
	ev := incentives.NewEquivocation(bundle, sign("one"), sign("two"))
	dir := t.TempDir()
	st := genesis
	for r := range 3 {
		var es []incentives.Evidence
		if r == 1 {
			es = append(es, *ev)
		}
		cs := []incentives.Contribution{{Peer: testID("P"), Shards: [][]byte{verify.PayloadCID([]byte{byte(r)})}}}
		cl, err := st.Build(cs, es, nil, chk)
		rec, next, rejected := cl.Record, cl.State, cl.Rejected
		if err != nil || len(rejected) > 0 {
			t.Fatalf("round %d: %v %v", r, err, rejected)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("r%d", r)), rec.Marshal(), 0o644); err != nil {
			t.Fatal(err)
		}
		st = next
	}
	// Round 0 earns 5; round 1's penalty takes 3 of it and jails P through round 2.
	if a := st.Account(testID("P")); a.Offences != 1 || a.Balance != 2 || a.Contributions != 1 || a.JailedUntil != 3 {
		t.Fatalf("account %+v: want one offence, balance 2, one rewarded round, jailed until 3", a)
	}
	got, n, err := ReplayDir(dir, genesis, chk)
	if err != nil || n != 3 || !got.Equal(st) {
		t.Fatalf("replay: %d %v", n, err)
	}
}
