package incentives_test

import (
	"bytes"
	"testing"

	"github.com/lowband/lowband/incentives"
)

// FuzzDecodeState: the state decoder never panics; what it accepts re-encodes to the same
// bytes and holds no more than the ledger's bounds.
func FuzzDecodeState(f *testing.F) {
	f.Add(genesis(f).Marshal())
	f.Add([]byte{0xa0})
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := incentives.DecodeState(data)
		if err != nil {
			return
		}
		if !bytes.Equal(s.Marshal(), data) {
			t.Fatal("accepted a non-canonical encoding")
		}
		if len(s.Accounts) > incentives.MaxAccounts {
			t.Fatalf("accepted %d accounts", len(s.Accounts))
		}
	})
}
