package store

import (
	"bytes"
	"errors"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
)

// TestSignedRecordKeptOnlyForTheStoredRecord: the node's signed record of a committed
// round is kept and read back; one that wraps another record, or that does not decode,
// is refused (ErrConflict) and nothing is kept.
func TestSignedRecordKeptOnlyForTheStoredRecord(t *testing.T) {
	s, _ := openTestStore(t)
	defer s.Close()
	fx := incentivestest.New("testnet", "run-1")
	rec := commitWithShards(t, s, fx)
	key := incentivestest.Identity("a")
	other := *rec
	other.ModelRoot = []byte("another model")
	bad, err := incentives.SignRecord(key, "net", "run", &other)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"another record": bad.Marshal(), "garbage": []byte("x")} {
		if err := s.PutSigned(0, data); !errors.Is(err, ErrConflict) {
			t.Errorf("%s: %v, want ErrConflict", name, err)
		}
	}
	if got, err := s.Signed(0); err != nil || got != nil {
		t.Fatalf("after refusals: %d bytes kept (%v)", len(got), err)
	}
	good, err := incentives.SignRecord(key, "net", "run", rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutSigned(0, good.Marshal()); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Signed(0); err != nil || !bytes.Equal(got, good.Marshal()) {
		t.Fatalf("read back %d bytes (%v), want the %d kept", len(got), err, len(good.Marshal()))
	}
}
