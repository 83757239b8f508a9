package store

import (
	"bytes"
	"errors"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
)

// TestSignedRecordKeptOnlyForTheRecordCommitted: the node's signed record of a round is
// kept with its commit and read back; one that wraps another record, or that does not
// decode, refuses the commit (ErrConflict) and nothing is written.
func TestSignedRecordKeptOnlyForTheRecordCommitted(t *testing.T) {
	s, _ := openTestStore(t)
	defer s.Close()
	fx := incentivestest.New("testnet", "run-1")
	st, _ := s.State()
	cs, _ := genRound(fx, 0)
	cl, err := st.Build(cs, nil, []byte("model"), fx.Checker())
	if err != nil {
		t.Fatal(err)
	}
	key := incentivestest.Identity("a")
	other := *cl.Record
	other.ModelRoot = []byte("another model")
	bad, err := incentives.SignRecord(key, "net", "run", &other)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"another record": bad.Marshal(), "garbage": []byte("x")} {
		if err := s.CommitSigned(data, cl.Record, cl.State, cl.Events, shardsOf(cl.Record)...); !errors.Is(err, ErrConflict) {
			t.Errorf("%s: %v, want ErrConflict", name, err)
		}
	}
	if got, err := s.Signed(0); err != nil || got != nil {
		t.Fatalf("after refusals: %d bytes kept (%v)", len(got), err)
	}
	if rec, _ := s.Record(0); rec != nil {
		t.Fatal("a refused commit stored its record")
	}
	good, err := incentives.SignRecord(key, "net", "run", cl.Record)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CommitSigned(good.Marshal(), cl.Record, cl.State, cl.Events, shardsOf(cl.Record)...); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Signed(0); err != nil || !bytes.Equal(got, good.Marshal()) {
		t.Fatalf("read back %d bytes (%v), want the %d kept", len(got), err, len(good.Marshal()))
	}
}
