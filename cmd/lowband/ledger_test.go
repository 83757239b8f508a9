package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/node"
	"github.com/lowband/lowband/node/store"
	"github.com/lowband/lowband/training/compress"
	"github.com/lowband/lowband/verify"
)

// ledgerTestPeer is the peer of the replayed records, in canonical form.
const ledgerTestPeer = "12D3KooWGRUVh6zGsDLTPHDA5ib1hLwrkdZLkb7H2zxEk2oHVqbU"

// simPeer is a peer attested by a devnet sim bundle, signing shards of round 0.
type simPeer struct {
	bundle []byte
	peer   string
	bh     [32]byte
	eph    ed25519.PrivateKey
	spec   *configs.Spec
}

func newSimPeer(t *testing.T, spec *configs.Spec, name string, keyByte byte) *simPeer {
	t.Helper()
	seed := configs.DevnetSimRootSeed()
	eph := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{keyByte}, ed25519.SeedSize))
	b, err := verify.NewSimBundle(ed25519.NewKeyFromSeed(seed[:]), bytes.Repeat([]byte{1}, verify.MeasurementSize),
		spec.NetworkID(), spec.Run, incentivestest.Identity(name), 0, eph.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	bundle, _ := b.Marshal()
	return &simPeer{bundle: bundle, peer: b.PeerID, bh: b.Hash(), eph: eph, spec: spec}
}

// shard signs payload as the peer's round-0 shard with key.
func (p *simPeer) shard(t *testing.T, key ed25519.PrivateKey, payload []byte) *verify.Shard {
	t.Helper()
	h := verify.ShardHeader{Network: p.spec.NetworkID(), Run: p.spec.Run, Round: 0, Peer: p.peer, Count: 1, BundleHash: p.bh[:]}
	s, err := verify.SignShard(key, h, payload)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (p *simPeer) signed(t *testing.T, key ed25519.PrivateKey, payload string) incentives.SignedHeader {
	s := p.shard(t, key, []byte(payload))
	return incentives.SignedHeader{Header: s.Header, Sig: s.Sig}
}

// codecShard is the first shard of a pseudo-gradient of the spec's model, every value v,
// encoded with the spec's codec.
func codecShard(t *testing.T, p *node.Params, v float64) []byte {
	t.Helper()
	var ts []compress.Tensor
	for _, name := range slices.Sorted(maps.Keys(p.Shapes)) {
		shape := p.Shapes[name]
		n := 1
		for _, d := range shape {
			n *= d
		}
		data := make([]float64, n)
		for i := range data {
			data[i] = v * float64(1+i%7)
		}
		ts = append(ts, compress.Tensor{Name: name, Shape: shape, Data: data})
	}
	enc, err := compress.NewEncoder(p.RoundConfig("p", 1).Compress)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := enc.Encode(ts)
	if err != nil {
		t.Fatal(err)
	}
	shards, err := msg.Shards()
	if err != nil {
		t.Fatal(err)
	}
	return shards[0].Data
}

// TestLedgerReplay: records written by one ledger replay through the binary, from the spec
// file alone, to the same root, re-checking equivocation and invalid-content evidence (the
// content check comes from the spec); a record with forged evidence, or with "invalid
// content" evidence whose shard is valid, is refused with an error.
func TestLedgerReplay(t *testing.T) {
	spec, err := configs.ParseSpec("devnet", configs.DevnetSpec)
	if err != nil {
		t.Fatal(err)
	}
	spec.Training = configs.DefaultTrainingSpecFor(configs.TaskSynthetic) // a small model
	if err := spec.Validate(); err != nil {
		t.Fatal(err)
	}
	specPath := filepath.Join(t.TempDir(), "network.toml")
	if err := configs.WriteSpec(specPath, spec); err != nil {
		t.Fatal(err)
	}
	params, err := node.NewParams(spec)
	if err != nil {
		t.Fatal(err)
	}
	genesis, err := store.GenesisFromSpec(spec.Incentives)
	if err != nil {
		t.Fatal(err)
	}
	chk := params.Checker

	// Peer P equivocates in round 0; peer Q signs a shard over the norm bound. Both pieces of
	// evidence go in round 1.
	p, q := newSimPeer(t, spec, "P", 7), newSimPeer(t, spec, "Q", 9)
	huge := q.shard(t, q.eph, codecShard(t, params, 10*params.MaxNorm))
	if err := params.CheckContent(huge.Payload); !errors.Is(err, compress.ErrNormTooLarge) {
		t.Fatalf("the oversized shard passes the content check: %v", err)
	}
	dir := t.TempDir()
	st := genesis
	for r := range 3 {
		var es []incentives.Evidence
		if r == 1 {
			es = append(es, *incentives.NewEquivocation(p.bundle, p.signed(t, p.eph, "one"), p.signed(t, p.eph, "two")),
				*incentives.NewInvalidContent(q.bundle, huge))
		}
		cs := []incentives.Contribution{{Peer: p.peer, Shards: [][]byte{verify.PayloadCID([]byte{byte(r)})}}}
		cl, err := st.Build(cs, es, nil, chk)
		if err != nil || len(cl.Rejected) > 0 {
			t.Fatalf("round %d: %v %v", r, err, cl.Rejected)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("round-%d.rec", r)), cl.Record.Marshal(), 0o644); err != nil {
			t.Fatal(err)
		}
		st = cl.State
	}
	if a, b := st.Account(p.peer), st.Account(q.peer); a.Offences != 1 || b.Offences != 1 {
		t.Fatalf("the equivocation and the invalid content were not both penalised: %+v %+v", a, b)
	}

	out, stderr, code := lb(t, "ledger", "replay", "--spec", specPath, "--records", dir, "--json")
	if code != 0 {
		t.Fatalf("replay: exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr, "warning") {
		t.Errorf("replay warns: %q", stderr)
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
	if got.ContentChecked == nil || !*got.ContentChecked {
		t.Errorf("replay JSON does not say content was checked: %s", out)
	}

	// Evidence signed by a key the bundle does not attest proves nothing: a record that
	// carries it does not replay, and the error says so.
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{8}, ed25519.SeedSize))
	forged := incentives.NewEquivocation(p.bundle, p.signed(t, other, "one"), p.signed(t, other, "two"))
	bad := &incentives.Record{Version: incentives.RecordVersion, Round: 3, PrevRoot: st.Head, Evidence: []incentives.Evidence{*forged}, NewRoot: st.Head}
	if err := os.WriteFile(filepath.Join(dir, "round-3.rec"), bad.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	wantError(t, "does not prove an offence", "ledger", "replay", "--spec", specPath, "--records", dir)

	// "Invalid content" evidence whose shard passes the content check proves nothing either.
	valid := q.shard(t, q.eph, codecShard(t, params, 1e-3))
	notBad := incentives.NewInvalidContent(q.bundle, valid)
	bad.Evidence = []incentives.Evidence{*notBad}
	if err := os.WriteFile(filepath.Join(dir, "round-3.rec"), bad.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	wantError(t, "passes the content checks", "ledger", "replay", "--spec", specPath, "--records", dir)
}
