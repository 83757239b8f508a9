package node

import (
	"bytes"
	"crypto/ed25519"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/verify"
)

var testWire = wire{network: "net-a", run: "run-a", maxPayload: 4 << 10}

// wireSamples returns well-formed objects of each kind for testWire, signed with a
// key from a fixed seed, and a shard header they share.
func wireSamples(t testing.TB) (shard, bundle, record, evidence []byte, hdr verify.ShardHeader) {
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize))
	root := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, ed25519.SeedSize))
	b, err := verify.NewSimBundle(root, make([]byte, 48), testWire.network, testWire.run, incentivestest.Identity("peer"), 1, key.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	if bundle, err = b.Marshal(); err != nil {
		t.Fatal(err)
	}
	bh := b.Hash()
	hdr = verify.ShardHeader{Network: testWire.network, Run: testWire.run, Round: 1, Peer: incentivestest.PeerID("peer"), Count: 1, BundleHash: bh[:]}
	s, err := verify.SignShard(key, hdr, []byte("payload"))
	if err != nil {
		t.Fatal(err)
	}
	if shard, err = s.Marshal(); err != nil {
		t.Fatal(err)
	}
	rec := incentives.Record{Version: incentives.RecordVersion, Round: 1, PrevRoot: make([]byte, 32), NewRoot: make([]byte, 32)}
	sr, err := incentives.SignRecord(incentivestest.Identity("peer"), testWire.network, testWire.run, &rec)
	if err != nil {
		t.Fatal(err)
	}
	return shard, bundle, sr.Marshal(), incentives.NewInvalidContent(bundle, s).Marshal(), s.Header
}

func TestWireChecks(t *testing.T) {
	shard, bundle, rec, ev, hdr := wireSamples(t)
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize))
	resign := func(edit func(*verify.ShardHeader)) []byte {
		h := hdr
		edit(&h)
		s, err := verify.SignShard(key, h, []byte("payload"))
		if err != nil {
			t.Fatal(err)
		}
		out, err := s.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	checks := testWire.checks()
	for _, c := range []struct {
		name, kind string
		data       []byte
		result     p2p.Result
		reason     string
	}{
		{"shard", p2p.KindShards, shard, p2p.Accept, reasonOK},
		{"bundle", p2p.KindAttest, bundle, p2p.Accept, reasonOK},
		{"record", p2p.KindRecords, rec, p2p.Accept, reasonOK},
		{"evidence", p2p.KindEvidence, ev, p2p.Accept, reasonOK},
		{"shard too large", p2p.KindShards, make([]byte, testWire.maxPayload+shardEnvelope+1), p2p.Reject, reasonSize},
		{"bundle too large", p2p.KindAttest, make([]byte, verify.MaxBundleSize+1), p2p.Reject, reasonSize},
		{"record over the gossip cap", p2p.KindRecords, make([]byte, p2p.MaxMessageSize+1), p2p.Reject, reasonSize},
		{"evidence over the gossip cap", p2p.KindEvidence, make([]byte, p2p.MaxMessageSize+1), p2p.Reject, reasonSize},
		{"junk shard", p2p.KindShards, []byte("junk"), p2p.Reject, reasonDecode},
		{"bundle on the shards topic", p2p.KindShards, bundle, p2p.Reject, reasonDecode},
		{"shard on the attest topic", p2p.KindAttest, shard, p2p.Reject, reasonDecode},
		{"junk record", p2p.KindRecords, []byte{0xa0}, p2p.Reject, reasonDecode},
		{"record over its own cap", p2p.KindRecords, make([]byte, incentives.MaxSignedRecordSize+1), p2p.Reject, reasonSize},
		{"record on the evidence topic", p2p.KindEvidence, rec, p2p.Reject, reasonDecode},
		{"shard of another network", p2p.KindShards, resign(func(h *verify.ShardHeader) { h.Network = "net-b" }), p2p.Reject, reasonNetwork},
		{"shard of another run", p2p.KindShards, resign(func(h *verify.ShardHeader) { h.Run = "run-b" }), p2p.Reject, reasonRun},
	} {
		obj, r, reason := checks[c.kind](c.data)
		if r != c.result || reason != c.reason || (obj != nil) != (r == p2p.Accept) {
			t.Errorf("%s: got %v (%s), want %v (%s)", c.name, r, reason, c.result, c.reason)
		}
	}
	other := wire{network: "net-b", run: testWire.run, maxPayload: testWire.maxPayload}
	for kind, data := range map[string][]byte{p2p.KindAttest: bundle, p2p.KindEvidence: ev, p2p.KindRecords: rec} {
		if _, r, reason := other.checks()[kind](data); r != p2p.Reject || reason != reasonNetwork {
			t.Errorf("%s of another network: got %v (%s)", kind, r, reason)
		}
	}
}

// FuzzWireChecks: no input makes a wire check panic, and every check answers with a
// known reason, accepting only with reasonOK.
func FuzzWireChecks(f *testing.F) {
	shard, bundle, rec, ev, _ := wireSamples(f)
	for _, d := range [][]byte{shard, bundle, rec, ev, nil, []byte("junk")} {
		f.Add(d)
	}
	wireReasons := map[string]bool{reasonOK: true, reasonSize: true, reasonDecode: true, reasonNetwork: true, reasonRun: true}
	checks := testWire.checks()
	f.Fuzz(func(t *testing.T, data []byte) {
		for kind, check := range checks {
			obj, r, reason := check(data)
			if !wireReasons[reason] || (r == p2p.Accept) != (reason == reasonOK) || (obj != nil) != (r == p2p.Accept) {
				t.Fatalf("%s: result %v with reason %q (decoded %T)", kind, r, reason, obj)
			}
		}
	})
}
