package p2p_test

import (
	"context"
	"testing"
	"time"

	"github.com/lowband/lowband/p2p/p2ptest"
	"github.com/lowband/lowband/version"
)

func TestIdentifyAgentCarriesTheVersion(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, b := pair(t, ctx)
	want := version.Agent()
	var got string
	if err := p2ptest.Poll(ctx, "identify", 10*time.Millisecond, func() bool {
		got = b.AgentVersion(a.ID())
		return got != ""
	}); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("agent version sent in identify = %q, want %q", got, want)
	}
}
