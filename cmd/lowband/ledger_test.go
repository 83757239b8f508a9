package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/node/store"
	"github.com/lowband/lowband/verify"
)

// TestLedgerReplay: records written by one ledger replay through the binary, from the spec
// file alone, to the same root; a record with forged evidence is refused with an error.
// ledgerTestPeer is the peer of the replayed records, in canonical form.
const ledgerTestPeer = "12D3KooWGRUVh6zGsDLTPHDA5ib1hLwrkdZLkb7H2zxEk2oHVqbU"

func TestLedgerReplay(t *testing.T) {
	spec, err := configs.ParseSpec("devnet", configs.DevnetSpec)
	if err != nil {
		t.Fatal(err)
	}
	specPath := filepath.Join(t.TempDir(), "network.toml")
	if err := configs.WriteSpec(specPath, spec); err != nil {
		t.Fatal(err)
	}
	genesis, err := store.GenesisFromSpec(spec.Incentives)
	if err != nil {
		t.Fatal(err)
	}
	chk, err := store.CheckerFromSpec(spec, nil)
	if err != nil {
		t.Fatal(err)
	}

	// Peer P equivocates in round 0 under a devnet sim bundle; the evidence goes in round 1.
	seed := configs.DevnetSimRootSeed()
	eph := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
	b, err := verify.NewSimBundle(ed25519.NewKeyFromSeed(seed[:]), bytes.Repeat([]byte{1}, verify.MeasurementSize),
		spec.NetworkID(), spec.Run, incentivestest.Identity("P"), 0, eph.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	bundle, _ := b.Marshal()
	bh := b.Hash()
	sign := func(key ed25519.PrivateKey, payload string) incentives.SignedHeader {
		h := verify.ShardHeader{Network: spec.NetworkID(), Run: spec.Run, Round: 0, Peer: b.PeerID, Count: 1, BundleHash: bh[:]}
		s, err := verify.SignShard(key, h, []byte(payload))
		if err != nil {
			t.Fatal(err)
		}
		return incentives.SignedHeader{Header: s.Header, Sig: s.Sig}
	}
	dir := t.TempDir()
	st := genesis
	for r := range 3 {
		var es []incentives.Evidence
		if r == 1 {
			es = append(es, *incentives.NewEquivocation(bundle, sign(eph, "one"), sign(eph, "two")))
		}
		cs := []incentives.Contribution{{Peer: b.PeerID, Shards: [][]byte{verify.PayloadCID([]byte{byte(r)})}}}
		cl, err := st.Build(cs, es, nil, chk)
		if err != nil || len(cl.Rejected) > 0 {
			t.Fatalf("round %d: %v %v", r, err, cl.Rejected)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("round-%d.rec", r)), cl.Record.Marshal(), 0o644); err != nil {
			t.Fatal(err)
		}
		st = cl.State
	}
	if a := st.Account(b.PeerID); a.Offences != 1 {
		t.Fatalf("the equivocation was not penalised: %+v", a)
	}

	out, stderr, code := lb(t, "ledger", "replay", "--spec", specPath, "--records", dir, "--json")
	if code != 0 {
		t.Fatalf("replay: exit %d: %s", code, stderr)
	}
	// Shard content cannot be re-checked offline: the replay says so, on stderr and in JSON.
	if !strings.Contains(stderr, "no content check") {
		t.Errorf("replay does not warn that shard content is not checked; stderr: %q", stderr)
	}
	var got struct {
		Records        int    `json:"records"`
		Root           string `json:"root"`
		Round          uint64 `json:"round"`
		ContentChecked *bool  `json:"content_checked"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := st.Root()
	if got.Records != 3 || got.Round != 3 || got.Root != hex.EncodeToString(want[:]) {
		t.Errorf("replay gave %+v, want 3 records, round 3, root %x", got, want)
	}
	if got.ContentChecked == nil || *got.ContentChecked {
		t.Errorf("replay JSON does not say content was not checked: %s", out)
	}

	// Evidence signed by a key the bundle does not attest proves nothing: a record that
	// carries it does not replay, and the error says so.
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{8}, ed25519.SeedSize))
	forged := incentives.NewEquivocation(bundle, sign(other, "one"), sign(other, "two"))
	bad := &incentives.Record{Version: incentives.RecordVersion, Round: 3, PrevRoot: st.Head, Evidence: []incentives.Evidence{*forged}, NewRoot: st.Head}
	if err := os.WriteFile(filepath.Join(dir, "round-3.rec"), bad.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	wantError(t, "does not prove an offence", "ledger", "replay", "--spec", specPath, "--records", dir)
}
