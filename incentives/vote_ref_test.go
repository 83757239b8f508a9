package incentives_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
)

// TestVoteRefRoundTripStandsForTheVote: a vote's reference decodes, verifies without the
// record, and with the record's bytes is the signed vote again, byte for byte; it is a
// small fraction of the vote.
func TestVoteRefRoundTripStandsForTheVote(t *testing.T) {
	s := signedRecord(t, "A")
	data := s.Ref().Marshal()
	v, err := incentives.DecodeVoteRef(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Verify(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(v.Marshal(), data) {
		t.Fatal("a decoded reference re-encodes to other bytes")
	}
	full, rec, err := v.With(s.Record)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(full.Marshal(), s.Marshal()) || !bytes.Equal(rec.Marshal(), s.Record) {
		t.Fatal("the reference with its record is not the vote")
	}
	if err := full.Verify(); err != nil {
		t.Fatal(err)
	}
	if len(data) > 256 {
		t.Fatalf("a reference of %d bytes", len(data))
	}
	committed, err := incentives.SignCommitted(incentivestest.Identity("A"), "testnet", "run-1", smallRecord(t))
	if err != nil {
		t.Fatal(err)
	}
	if committed.Ref() != nil {
		t.Fatal("a committed record, which is no vote, has a reference")
	}
}

// TestVoteRefWithAnotherRecordRefused: the bytes given to With must be the record the
// reference names, of its round.
func TestVoteRefWithAnotherRecordRefused(t *testing.T) {
	s := signedRecord(t, "A")
	v := s.Ref()
	other := smallRecord(t)
	other.ModelRoot = []byte("other model")
	if _, _, err := v.With(other.Marshal()); !errors.Is(err, incentives.ErrMalformed) {
		t.Fatalf("another record: %v, want ErrMalformed", err)
	}
	if _, _, err := v.With([]byte{0xa0}); !errors.Is(err, incentives.ErrMalformed) {
		t.Fatalf("junk: %v, want ErrMalformed", err)
	}
	// A record of another round under the digest it names: the round signed decides.
	r5 := smallRecord(t)
	r5.Round = 5
	v.Digest = func() []byte { d := incentives.RecordDigest(r5.Marshal()); return d[:] }()
	if _, _, err := v.With(r5.Marshal()); !errors.Is(err, incentives.ErrMalformed) {
		t.Fatalf("a record of another round: %v, want ErrMalformed", err)
	}
}

// TestVoteRefForgedRefused: a reference whose digest, round or signer is not what was
// signed does not verify; one out of form does not decode.
func TestVoteRefForgedRefused(t *testing.T) {
	s := signedRecord(t, "A")
	for name, edit := range map[string]func(*incentives.VoteRef){
		"digest": func(v *incentives.VoteRef) { v.Digest[0] ^= 1 },
		"round":  func(v *incentives.VoteRef) { v.Round++ },
		"signer": func(v *incentives.VoteRef) { v.Signer = incentivestest.PeerID("B") },
		"run":    func(v *incentives.VoteRef) { v.Run = "run-2" },
	} {
		v := s.Ref()
		edit(v)
		got, err := incentives.DecodeVoteRef(v.Marshal())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := got.Verify(); !errors.Is(err, incentives.ErrRecordSignature) {
			t.Fatalf("%s changed: %v, want ErrRecordSignature", name, err)
		}
	}
	for name, edit := range map[string]func(*incentives.VoteRef){
		"version":       func(v *incentives.VoteRef) { v.Version = incentives.SignedRecordVersion },
		"short digest":  func(v *incentives.VoteRef) { v.Digest = v.Digest[:31] },
		"short sig":     func(v *incentives.VoteRef) { v.Sig = v.Sig[:63] },
		"no network":    func(v *incentives.VoteRef) { v.Network = "" },
		"bad signer ID": func(v *incentives.VoteRef) { v.Signer = "not a peer" },
	} {
		v := s.Ref()
		edit(v)
		if _, err := incentives.DecodeVoteRef(v.Marshal()); !errors.Is(err, incentives.ErrMalformed) {
			t.Fatalf("%s: %v, want ErrMalformed", name, err)
		}
	}
	if _, err := incentives.DecodeVoteRef(make([]byte, incentives.MaxVoteRefSize+1)); !errors.Is(err, incentives.ErrMalformed) {
		t.Fatalf("oversize: %v", err)
	}
	if _, err := incentives.DecodeVoteRef(s.Marshal()); err == nil {
		t.Fatal("a whole signed record decoded as a reference")
	}
	if _, _, err := incentives.DecodeSignedRecord(s.Ref().Marshal()); err == nil {
		t.Fatal("a reference decoded as a whole signed record")
	}
}

// FuzzDecodeVoteRef: the decoder never panics; what it accepts re-encodes to the same
// bytes, and Verify and With do not panic on it.
func FuzzDecodeVoteRef(f *testing.F) {
	s := signedRecord(f, "A")
	f.Add(s.Ref().Marshal(), s.Record)
	f.Add([]byte{0xa0}, []byte{0xa0})
	f.Fuzz(func(t *testing.T, data, record []byte) {
		v, err := incentives.DecodeVoteRef(data)
		if err != nil {
			return
		}
		if !bytes.Equal(v.Marshal(), data) {
			t.Fatal("accepted a non-canonical encoding")
		}
		_ = v.Verify()
		if full, rec, err := v.With(record); err == nil && (full.Round != rec.Round || incentives.RecordDigest(full.Record) != v.Key()) {
			t.Fatal("With gave a record the reference does not name")
		}
	})
}
