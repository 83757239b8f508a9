package incentives_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
)

// smallRecord is a record of round 0 with two contributions and no evidence.
func smallRecord(t testing.TB) *incentives.Record {
	t.Helper()
	fx := incentivestest.New("testnet", "run-1")
	cl, err := genesis(t).Build([]incentives.Contribution{fx.Contribution("A", 0, 2), fx.Contribution("B", 0, 1)}, nil, []byte("model"), fx.Checker())
	if err != nil {
		t.Fatal(err)
	}
	return cl.Record
}

func signedRecord(t testing.TB, signer string) *incentives.SignedRecord {
	t.Helper()
	s, err := incentives.SignRecord(incentivestest.Identity(signer), "testnet", "run-1", smallRecord(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// decodeVerify is what a receiver does: decode, then check the signature.
func decodeVerify(data []byte) error {
	s, _, err := incentives.DecodeSignedRecord(data)
	if err != nil {
		return err
	}
	return s.Verify()
}

func TestSignedRecordRoundTripVerifies(t *testing.T) {
	s := signedRecord(t, "A")
	data := s.Marshal()
	got, rec, err := incentives.DecodeSignedRecord(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := got.Verify(); err != nil {
		t.Fatal(err)
	}
	if got.Signer != incentivestest.PeerID("A") || !bytes.Equal(rec.Marshal(), smallRecord(t).Marshal()) {
		t.Fatalf("signer %s, record %x", got.Signer, rec.Marshal())
	}
	if !bytes.Equal(got.Marshal(), data) {
		t.Fatal("a decoded signed record re-encodes to other bytes")
	}
}

// Flipping any one byte of a signed record makes it fail to decode or to verify.
func TestSignedRecordFlippedByteFails(t *testing.T) {
	data := signedRecord(t, "A").Marshal()
	for i := range data {
		bad := bytes.Clone(data)
		bad[i] ^= 0x01
		if err := decodeVerify(bad); err == nil {
			t.Fatalf("byte %d of %d flipped: the signed record still decodes and verifies", i, len(data))
		}
	}
}

// A signature made for one network or run does not verify for another.
func TestSignedRecordOtherNetworkOrRunDoesNotVerify(t *testing.T) {
	for _, change := range []func(*incentives.SignedRecord){
		func(s *incentives.SignedRecord) { s.Network = "othernet" },
		func(s *incentives.SignedRecord) { s.Run = "run-2" },
	} {
		s := signedRecord(t, "A")
		change(s)
		err := decodeVerify(s.Marshal())
		if !errors.Is(err, incentives.ErrRecordSignature) {
			t.Fatalf("signature moved to network %q run %q: %v, want ErrRecordSignature", s.Network, s.Run, err)
		}
	}
}

// A record signed by A's key but naming B as its signer does not verify.
func TestSignedRecordOtherSignersPeerIDFails(t *testing.T) {
	s := signedRecord(t, "A")
	s.Signer = incentivestest.PeerID("B")
	if err := decodeVerify(s.Marshal()); !errors.Is(err, incentives.ErrRecordSignature) {
		t.Fatalf("A's signature under B's name: %v, want ErrRecordSignature", err)
	}
}

// Over MaxSignedRecordSize, the bytes are refused by their length, before decoding: even a
// well-formed prefix does not help.
func TestSignedRecordOversizeRefusedBeforeDecoding(t *testing.T) {
	data := append(signedRecord(t, "A").Marshal(), make([]byte, incentives.MaxSignedRecordSize)...)
	_, _, err := incentives.DecodeSignedRecord(data)
	if !errors.Is(err, incentives.ErrMalformed) || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("oversize signed record: %v, want a size error", err)
	}
}

// Fields out of form are refused by DecodeSignedRecord (not left to Verify).
func TestSignedRecordOutOfFormRefused(t *testing.T) {
	for name, change := range map[string]func(*incentives.SignedRecord){
		"version":   func(s *incentives.SignedRecord) { s.Version = 4 },
		"round":     func(s *incentives.SignedRecord) { s.Round++ },
		"network":   func(s *incentives.SignedRecord) { s.Network = "" },
		"signer":    func(s *incentives.SignedRecord) { s.Signer = "QmNotAPeer" },
		"signature": func(s *incentives.SignedRecord) { s.Sig = s.Sig[:10] },
		"record":    func(s *incentives.SignedRecord) { s.Record = []byte{0xa0} },
	} {
		s := signedRecord(t, "A")
		change(s)
		if _, _, err := incentives.DecodeSignedRecord(s.Marshal()); !errors.Is(err, incentives.ErrMalformed) {
			t.Errorf("%s out of form: %v, want ErrMalformed", name, err)
		}
	}
}

// A signed record of version 1 (signed over the whole record) is refused by its version,
// with an error that says so.
func TestSignedRecordVersion1Refused(t *testing.T) {
	s := signedRecord(t, "A")
	s.Version = 1
	_, _, err := incentives.DecodeSignedRecord(s.Marshal())
	if !errors.Is(err, incentives.ErrMalformed) || !strings.Contains(err.Error(), "version 1") {
		t.Fatalf("version 1: %v, want ErrMalformed naming version 1", err)
	}
}

// The signature covers the record through its digest: a record of the same round with
// other bytes under the signature of the first does not verify.
func TestSignedRecordOtherRecordUnderTheSignatureFails(t *testing.T) {
	s := signedRecord(t, "A")
	other := smallRecord(t)
	other.ModelRoot = []byte("other model")
	s.Record = other.Marshal()
	if err := decodeVerify(s.Marshal()); !errors.Is(err, incentives.ErrRecordSignature) {
		t.Fatalf("another record under the signature: %v, want ErrRecordSignature", err)
	}
}

// FuzzDecodeSignedRecord: the decoder never panics; what it accepts re-encodes to the same
// bytes, holds a record that re-encodes to its bytes, and Verify does not panic on it.
func FuzzDecodeSignedRecord(f *testing.F) {
	f.Add(signedRecord(f, "A").Marshal())
	v1 := signedRecord(f, "A")
	v1.Version = 1
	f.Add(v1.Marshal())
	f.Add([]byte{0xa0})
	f.Fuzz(func(t *testing.T, data []byte) {
		s, rec, err := incentives.DecodeSignedRecord(data)
		if err != nil {
			return
		}
		if !bytes.Equal(s.Marshal(), data) || !bytes.Equal(rec.Marshal(), s.Record) {
			t.Fatal("accepted a non-canonical encoding")
		}
		_ = s.Verify()
	})
}
