package doctor

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/protocol"

	"github.com/lowband/lowband/p2p"
)

// skewProber answers the time protocol with a fixed offset per peer; other peers do not
// answer. Probe is fakeProber's.
type skewProber map[peer.ID]time.Duration

func (f skewProber) Probe(ctx context.Context, ai peer.AddrInfo, proto protocol.ID) p2p.ProbeResult {
	return fakeProber{}.Probe(ctx, ai, proto)
}

func (f skewProber) Clock(_ context.Context, ai peer.AddrInfo, _ protocol.ID) p2p.ClockResult {
	if d, ok := f[ai.ID]; ok {
		return p2p.ClockResult{Offset: d, RTT: 4 * time.Millisecond}
	}
	return p2p.ClockResult{Err: errors.New("connection refused")}
}

// TestClockSkewAgainstBootstrapPeers: the skew is the median of the bootstrap peers'
// offsets (one peer's lie does not move it): within a few seconds is OK, more is a WARN,
// beyond the round deadline's lower bound a FAIL, and no peer answering skips the check.
func TestClockSkewAgainstBootstrapPeers(t *testing.T) {
	ctx := context.Background()
	a, b, c := newID(t), newID(t), newID(t)
	cfg, s := bootstrapWith(t, addrOf(a), addrOf(b), addrOf(c))
	deadline := time.Duration(s.Round.DeadlineMin) * time.Second
	for _, tc := range []struct {
		what    string
		offsets skewProber
		level   Level
		words   []string
	}{
		{"in step", skewProber{a: 200 * time.Millisecond, b: -100 * time.Millisecond}, OK, []string{"2 peers", "ms"}},
		{"one liar", skewProber{a: 0, b: 100 * time.Millisecond, c: time.Hour}, OK, []string{"3 peers"}},
		{"a few seconds behind", skewProber{a: 5 * time.Second, b: 5 * time.Second}, Warn, []string{"behind", "chrony"}},
		{"beyond the deadline", skewProber{a: -deadline - time.Second}, Fail, []string{"ahead", "deadline", "timedatectl"}},
		{"nobody answers", skewProber{}, Skip, []string{"not checked", "answered"}},
	} {
		want(t, tc.what, ClockSkew(ctx, cfg, s, "", tc.offsets, time.Second), tc.level, tc.words...)
	}
}
