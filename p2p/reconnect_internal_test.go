package p2p

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
)

// TestOnlyASilentConnectionIsStale: a probe that timed out (the stream's deadline, as a
// net.Error, or the context's) marks a connection dead; one that was reset or closed
// (the swarm or the peer closing a duplicate connection) does not, nor no error.
func TestOnlyASilentConnectionIsStale(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{os.ErrDeadlineExceeded, true},
		{fmt.Errorf("reading the time: %w", os.ErrDeadlineExceeded), true},
		{context.DeadlineExceeded, true},
		{errors.New("stream reset"), false},
		{fmt.Errorf("connection closed: %w", context.Canceled), false},
		{nil, false},
	} {
		if got := timedOut(c.err); got != c.want {
			t.Errorf("timedOut(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
