package p2p

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzReadCapped checks the size-capped reader that every stream request and
// response goes through: it returns the input exactly when it fits, and
// errTooLarge otherwise, never more than max bytes.
func FuzzReadCapped(f *testing.F) {
	f.Add([]byte{}, 0)
	f.Add([]byte("abc"), 3)
	f.Add([]byte("abcd"), 3)
	f.Add(bytes.Repeat([]byte{1}, 5000), 4096)
	f.Add([]byte("x"), -1)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		got, err := readCapped(bytes.NewReader(data), max)
		fits := len(data) <= max || (max < 0 && len(data) == 0)
		switch {
		case fits && err != nil:
			t.Fatalf("%d bytes under cap %d: %v", len(data), max, err)
		case fits && !bytes.Equal(got, data):
			t.Fatalf("read %d bytes, want %d", len(got), len(data))
		case !fits && !errors.Is(err, errTooLarge):
			t.Fatalf("%d bytes over cap %d: got %d bytes, err %v", len(data), max, len(got), err)
		}
	})
}
