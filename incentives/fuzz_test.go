package incentives_test

import (
	"bytes"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/verify"
)

func seedEvidence(tb testing.TB) [][]byte {
	fx := incentivestest.New("testnet", "run-1")
	return [][]byte{
		fx.Equivocation("B", 3, 1, "x").Marshal(),
		fx.InvalidAttestation("C", 2, verify.ClassMeasurementNotAllowed).Marshal(),
		fx.InvalidContent("D", 1, 0).Marshal(),
		twoBundleEquivocation(fx).Marshal(),
		recordEquivocation(tb, signedVote(tb, "B", "testnet", "run-1", 2, "A"), signedVote(tb, "B", "testnet", "run-1", 2, "C")).Marshal(),
		recordEquivocation(tb, signedVote(tb, "B", "testnet", "run-2", 2, "A"), signedVote(tb, "B", "testnet", "run-2", 2, "C")).Marshal(),
	}
}

// twoBundleEquivocation is E's equivocation under its two bundles, one key each.
func twoBundleEquivocation(fx *incentivestest.Fixture) *incentives.Evidence {
	b1, b2 := fx.Bundle("E", ""), fx.SecondBundle("E")
	x := fx.Shard("E", b1, 3, 0, []byte("one"))
	y, err := verify.SignShard(fx.SecondKey("E"), x.Header, []byte("two"))
	if err != nil {
		panic(err)
	}
	return incentives.NewEquivocationOf(b1, incentivestest.Signed(x), b2, incentivestest.Signed(y))
}

func seedRecord(t testing.TB) []byte {
	fx := incentivestest.New("testnet", "run-1")
	st := genesis(t)
	es := []incentives.Evidence{*fx.Equivocation("B", 0, 0, "x"), *fx.InvalidContent("D", 0, 1)}
	z := fx.Contribution("Z", 0, 1)
	z.Dropped = true // left out by the aggregation rule
	cl, err := st.Build([]incentives.Contribution{fx.Contribution("A", 0, 2), z}, es, []byte("model"), fx.Checker())
	rec := cl.Record
	if err != nil {
		t.Fatal(err)
	}
	return rec.Marshal()
}

// FuzzDecodeEvidence: the decoder never panics, and what it accepts re-encodes to the
// same bytes (one encoding, one ID).
func FuzzDecodeEvidence(f *testing.F) {
	for _, s := range seedEvidence(f) {
		f.Add(s)
	}
	f.Add([]byte{0xa0})
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := incentives.DecodeEvidence(data)
		if err != nil {
			return
		}
		if !bytes.Equal(e.Marshal(), data) {
			t.Fatalf("accepted a non-canonical encoding")
		}
		// Checking and reading the claimed offence must not panic either, whatever they
		// decide.
		_, _ = incentivestest.New("testnet", "run-1").Checker().Check(e)
		_, _ = e.Claim()
	})
}

// FuzzDecodeRecord: the decoder never panics, and what it accepts re-encodes to the same
// bytes and is already canonical.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(seedRecord(f))
	f.Add([]byte{0xa0})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := incentives.DecodeRecord(data)
		if err != nil {
			return
		}
		if !bytes.Equal(r.Marshal(), data) {
			t.Fatalf("accepted a non-canonical encoding")
		}
		c := *r
		c.Canonicalize()
		if !bytes.Equal(c.Marshal(), data) {
			t.Fatalf("accepted a record that is not in canonical order")
		}
	})
}

// TestDecodeRoundTrip: what the package encodes, it decodes to an equal value; limits hold.
func TestDecodeRoundTrip(t *testing.T) {
	for _, s := range seedEvidence(t) {
		e, err := incentives.DecodeEvidence(s)
		if err != nil || !bytes.Equal(e.Marshal(), s) {
			t.Fatalf("evidence round trip: %v", err)
		}
	}
	rec := seedRecord(t)
	if r, err := incentives.DecodeRecord(rec); err != nil || !bytes.Equal(r.Marshal(), rec) {
		t.Fatalf("record round trip: %v", err)
	}
	st := genesis(t)
	if s, err := incentives.DecodeState(st.Marshal()); err != nil || !s.Equal(st) {
		t.Fatalf("state round trip: %v", err)
	}
	big := make([]byte, incentives.MaxEvidenceSize+1)
	if _, err := incentives.DecodeEvidence(big); err == nil {
		t.Fatal("oversized evidence decoded")
	}
	// A record whose evidence is out of ID order is refused.
	fx := incentivestest.New("testnet", "run-1")
	r, _ := incentives.DecodeRecord(rec)
	r.Evidence = append(r.Evidence, *fx.Equivocation("Q", 0, 0, "x"), *fx.Equivocation("R", 0, 0, "x"))
	r.Evidence[0], r.Evidence[len(r.Evidence)-1] = r.Evidence[len(r.Evidence)-1], r.Evidence[0]
	if _, err := incentives.DecodeRecord(r.Marshal()); err == nil {
		t.Fatal("a record with unsorted evidence decoded")
	}
}

// BenchmarkApply applies one round of 64 contributions and 4 evidence items.
func BenchmarkApply(b *testing.B) {
	fx := incentivestest.New("testnet", "run-1")
	chk := fx.Checker()
	st := genesis(b)
	var cs []incentives.Contribution
	for i := range 64 {
		cs = append(cs, fx.Contribution(testPeerName(i), 0, 4))
	}
	es := []incentives.Evidence{
		*fx.Equivocation("B", 0, 0, "x"), *fx.InvalidContent("D", 0, 1),
		*fx.InvalidAttestation("C", 0, verify.ClassMeasurementNotAllowed), *fx.Equivocation("E", 0, 3, "y"),
	}
	cl, err := st.Build(cs, es, []byte("model"), chk)
	rec := cl.Record
	if err != nil || len(rec.Evidence) != 4 {
		b.Fatalf("building the round: %v", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := st.Apply(rec, chk); err != nil {
			b.Fatal(err)
		}
	}
}
