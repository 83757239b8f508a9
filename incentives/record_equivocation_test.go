package incentives_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
)

// signedVote is the record of round r listing the contributions of peers, signed by the
// identity of signer for network and run.
func signedVote(t testing.TB, signer, network, run string, r uint64, peers ...string) *incentives.SignedRecord {
	t.Helper()
	return signedVoteWith(t, signer, network, run, r, nil, peers...)
}

// signedVoteWith is signedVote with evidence items in the record.
func signedVoteWith(t testing.TB, signer, network, run string, r uint64, es []incentives.Evidence, peers ...string) *incentives.SignedRecord {
	t.Helper()
	fx := incentivestest.New(network, run)
	rec := &incentives.Record{Version: incentives.RecordVersion, Round: r, PrevRoot: make([]byte, 32),
		ModelRoot: []byte("model"), NewRoot: make([]byte, 32), Evidence: es}
	for _, p := range peers {
		rec.Contributions = append(rec.Contributions, fx.Contribution(p, r, 1))
	}
	rec.Canonicalize()
	sr, err := incentives.SignRecord(incentivestest.Identity(signer), network, run, rec)
	if err != nil {
		t.Fatal(err)
	}
	return sr
}

func recordEquivocation(t testing.TB, a, b *incentives.SignedRecord) *incentives.Evidence {
	t.Helper()
	e, err := incentives.NewRecordEquivocation(a, b)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestRecordEquivocationProvesTheSignersOffence: two different records of one signer for
// one round, both signed, prove a record equivocation by that signer in that round, in
// either order given (one canonical order, one ID).
func TestRecordEquivocationProvesTheSignersOffence(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	a := signedVote(t, "B", "testnet", "run-1", 2, "A")
	b := signedVote(t, "B", "testnet", "run-1", 2, "A", "C")
	e, f := recordEquivocation(t, a, b), recordEquivocation(t, b, a)
	if e.ID() != f.ID() {
		t.Fatal("the two orders give two IDs")
	}
	again, err := incentives.DecodeEvidence(e.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	off, err := fx.Checker().Check(again)
	want := incentives.Offence{Kind: incentives.KindRecordEquivocation, Peer: incentivestest.PeerID("B"), Round: 2}
	if err != nil || off != want {
		t.Fatalf("checked: %v, %v; want %v", off, err, want)
	}
	if claim, err := again.Claim(); err != nil || claim != want {
		t.Fatalf("claimed: %v, %v; want %v", claim, err, want)
	}
}

// TestRecordEquivocationOfLargeRecordsIsSmall: two records of nearly 300 KiB each (evidence
// items pad them), together more than MaxEvidenceSize, make evidence of under 1 KiB that
// decodes and proves the offence.
func TestRecordEquivocationOfLargeRecordsIsSmall(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	pad := func(peer string) []incentives.Evidence {
		b := fx.Bundle(peer, "")
		return []incentives.Evidence{*incentives.NewInvalidContent(b, fx.Shard(peer, b, 2, 0, make([]byte, 300<<10)))}
	}
	a := signedVoteWith(t, "B", "testnet", "run-1", 2, pad("P"), "A")
	b := signedVoteWith(t, "B", "testnet", "run-1", 2, pad("Q"), "A")
	if n := len(a.Marshal()) + len(b.Marshal()); n <= incentives.MaxEvidenceSize {
		t.Fatalf("the records are %d bytes together, want more than MaxEvidenceSize", n)
	}
	e := recordEquivocation(t, a, b)
	data := e.Marshal()
	if len(data) > 1024 {
		t.Fatalf("evidence of %d bytes, want under 1 KiB", len(data))
	}
	again, err := incentives.DecodeEvidence(data)
	if err != nil {
		t.Fatal(err)
	}
	if off, err := fx.Checker().Check(again); err != nil || off.Peer != incentivestest.PeerID("B") {
		t.Fatalf("checked: %v, %v", off, err)
	}
}

// TestRecordEquivocationNeedsTwoVotesOfOneSignerAndRound: records of two signers, two
// rounds or one record twice make no evidence.
func TestRecordEquivocationNeedsTwoVotesOfOneSignerAndRound(t *testing.T) {
	a := signedVote(t, "B", "testnet", "run-1", 2, "A")
	for name, b := range map[string]*incentives.SignedRecord{
		"two signers":    signedVote(t, "C", "testnet", "run-1", 2, "A", "C"),
		"two rounds":     signedVote(t, "B", "testnet", "run-1", 3, "A"),
		"another run":    signedVote(t, "B", "testnet", "run-2", 2, "C"),
		"the same twice": a,
	} {
		if _, err := incentives.NewRecordEquivocation(a, b); !errors.Is(err, incentives.ErrNotDoubleVote) {
			t.Errorf("%s: %v, want ErrNotDoubleVote", name, err)
		}
	}
}

// doubleVote is the evidence of a and b without any check, its votes in canonical order.
func doubleVote(a, b *incentives.SignedRecord) *incentives.Evidence {
	da, db := incentives.RecordDigest(a.Record), incentives.RecordDigest(b.Record)
	vs := []incentives.Vote{{Digest: da[:], Sig: a.Sig}, {Digest: db[:], Sig: b.Sig}}
	if bytes.Compare(vs[0].Digest, vs[1].Digest) > 0 {
		vs[0], vs[1] = vs[1], vs[0]
	}
	return &incentives.Evidence{Version: incentives.EvidenceVersion, Kind: incentives.KindRecordEquivocation,
		DoubleVote: &incentives.DoubleVote{Network: a.Network, Run: a.Run, Signer: a.Signer, Round: a.Round, Votes: vs}}
}

// TestRecordEquivocationRefusesWhatProvesNothing: a vote of another signer or round under
// the double vote's name, another run than the checker's, a broken signature, and the two
// votes out of order or of one digest.
func TestRecordEquivocationRefusesWhatProvesNothing(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	a, b := signedVote(t, "B", "testnet", "run-1", 2, "A"), signedVote(t, "B", "testnet", "run-1", 2, "A", "C")
	broken := *b
	broken.Sig = bytes.Clone(b.Sig)
	broken.Sig[0] ^= 1
	cases := map[string]*incentives.Evidence{
		"another signer": doubleVote(a, signedVote(t, "C", "testnet", "run-1", 2, "C")),
		"another round":  doubleVote(a, signedVote(t, "B", "testnet", "run-1", 3, "C")),
		"another run":    doubleVote(signedVote(t, "B", "testnet", "run-2", 2, "A"), signedVote(t, "B", "testnet", "run-2", 2, "C")),
		"bad signature":  doubleVote(a, &broken),
	}
	for name, e := range cases {
		if _, err := fx.Checker().Check(e); !incentives.IsBadEvidence(err) {
			t.Errorf("%s: checked with %v, want refused", name, err)
		}
	}
	swapped := doubleVote(a, b)
	v := swapped.DoubleVote
	v.Votes[0], v.Votes[1] = v.Votes[1], v.Votes[0]
	twice := doubleVote(a, b)
	twice.DoubleVote.Votes[1] = twice.DoubleVote.Votes[0]
	for name, e := range map[string]*incentives.Evidence{"out of order": swapped, "one digest twice": twice} {
		if _, err := incentives.DecodeEvidence(e.Marshal()); !errors.Is(err, incentives.ErrMalformed) {
			t.Errorf("%s: decoded with %v, want ErrMalformed", name, err)
		}
	}
}

// TestRecordEquivocationSlashesLikeShardEquivocation: a record including the evidence
// takes the equivocation penalty from the signer's stake and jails it, once per round
// whatever the number of proofs.
func TestRecordEquivocationSlashesLikeShardEquivocation(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	st := genesis(t)
	a := signedVote(t, "B", "testnet", "run-1", 0, "A")
	b := signedVote(t, "B", "testnet", "run-1", 0, "A", "C")
	c := signedVote(t, "B", "testnet", "run-1", 0, "C")
	es := []incentives.Evidence{*recordEquivocation(t, a, b), *recordEquivocation(t, b, c)}
	cl, err := st.Build(nil, es, []byte("model"), fx.Checker())
	if err != nil {
		t.Fatal(err)
	}
	if len(cl.Record.Evidence) != 1 {
		t.Fatalf("record includes %d proofs of one offence, want 1", len(cl.Record.Evidence))
	}
	next, _, err := st.Apply(cl.Record, fx.Checker())
	if err != nil {
		t.Fatal(err)
	}
	acc, want := next.Account(incentivestest.PeerID("B")), st.Stake(incentivestest.PeerID("B"))-st.Params.Penalties[incentives.KindEquivocation]
	if acc.Stake != want || acc.Offences != 1 || !next.Jailed(acc.Peer) {
		t.Fatalf("B after the record: %+v, want stake %d, one offence, jailed", acc, want)
	}
}

// TestCommittedRecordIsNoVote: a record signed with SignCommitted verifies as itself and is
// not a vote, and paired with its signer's vote for the same round it makes no evidence
// that passes the checker, presented as it is or as a vote: its signature covers another
// domain, so what a node commits after a repair, and serves to whoever asks, cannot frame
// it for a vote cast twice. Two votes still do.
func TestCommittedRecordIsNoVote(t *testing.T) {
	fx := incentivestest.New("testnet", "run-1")
	key := incentivestest.Identity("B")
	rec := func(b byte) *incentives.Record {
		root := make([]byte, 32)
		root[0] = b
		return &incentives.Record{Version: incentives.RecordVersion, Round: 7, PrevRoot: make([]byte, 32), NewRoot: root}
	}
	vote, err := incentives.SignRecord(key, "testnet", "run-1", rec(1))
	if err != nil {
		t.Fatal(err)
	}
	signed, err := incentives.SignCommitted(key, "testnet", "run-1", rec(2))
	if err != nil {
		t.Fatal(err)
	}
	committed, _, err := incentives.DecodeSignedRecord(signed.Marshal())
	if err != nil || committed.Verify() != nil {
		t.Fatalf("a committed record does not decode and verify: %v", err)
	}
	if !vote.IsVote() || committed.IsVote() {
		t.Fatalf("IsVote: vote %v, committed %v", vote.IsVote(), committed.IsVote())
	}
	asVote := *committed
	asVote.Version = incentives.SignedRecordVersion // the same signature presented as a vote
	if asVote.Verify() == nil {
		t.Fatal("a committed record's signature verified as a vote")
	}
	for _, other := range []*incentives.SignedRecord{committed, &asVote} {
		if e, err := incentives.NewRecordEquivocation(vote, other); err == nil {
			if _, err := fx.Checker().Check(e); err == nil {
				t.Fatal("a vote and a committed record of one round proved a vote cast twice")
			}
		}
	}
	second, err := incentives.SignRecord(key, "testnet", "run-1", rec(2))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fx.Checker().Check(recordEquivocation(t, vote, second)); err != nil {
		t.Fatalf("two votes of one round: %v", err)
	}
}
