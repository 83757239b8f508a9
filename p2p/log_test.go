package p2p_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// syncBuffer is a bytes.Buffer safe for the host's concurrent log writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestLogLinesNameTheHostByItsFullPeerID(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out syncBuffer
	c := p2ptest.Config(p2ptest.Key())
	c.Logger = slog.New(slog.NewTextHandler(&out, nil))
	h, err := p2p.New(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var line string
	if err := p2ptest.Poll(ctx, "a log line", 10*time.Millisecond, func() bool {
		line = out.String()
		return strings.Contains(line, "no bootstrap or cached peers")
	}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(line, "self="+h.ID().String()) || strings.Contains(line, "<peer.ID") {
		t.Errorf("log line does not name the host as self=%s:\n%s", h.ID(), line)
	}
}
