package p2p_test

import (
	"bufio"
	"context"
	"encoding/hex"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
)

// TestHelperQUICPeer is not a test: TestGossipReachesAPeerRestartedAfterKillNine runs the
// test binary with it in a process of its own, to be killed with SIGKILL. It starts a
// host on loopback QUIC with the key and bootstrap address it is given, subscribes to
// the shards topic, prints "ready" once it is connected, and waits to be killed.
func TestHelperQUICPeer(t *testing.T) {
	keyHex, boot := os.Getenv("LOWBAND_HELPER_KEY"), os.Getenv("LOWBAND_HELPER_BOOT")
	if keyHex == "" {
		t.Skip("run by TestGossipReachesAPeerRestartedAfterKillNine")
	}
	raw, err := hex.DecodeString(keyHex)
	if err != nil {
		t.Fatal(err)
	}
	key, err := crypto.UnmarshalPrivateKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	ai, err := peer.AddrInfoFromP2pAddr(ma.StringCast(boot))
	if err != nil {
		t.Fatal(err)
	}
	cfg := p2ptest.Config(key)
	cfg.Listen, cfg.Bootstrap = p2ptest.ListenQUIC, []peer.AddrInfo{*ai}
	h, err := p2p.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Subscribe(p2p.KindShards); err != nil {
		t.Fatal(err)
	}
	for len(h.TopicPeers(p2p.KindShards)) == 0 {
		time.Sleep(50 * time.Millisecond)
	}
	os.Stdout.WriteString("ready\n")
	select {}
}

// TestGossipReachesAPeerRestartedAfterKillNine: a peer on QUIC whose process is killed
// with SIGKILL leaves its connection open on this side (QUIC has no kernel to close it;
// it would stay until its 30 s idle timeout), and gossip kept going into it. When the peer
// starts again with the same key on a new port and connects, the host finds the old
// connection dead and closes it, and a message published after that reaches the
// restarted peer well within the idle timeout.
func TestGossipReachesAPeerRestartedAfterKillNine(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := p2ptest.Config(p2ptest.Key())
	cfg.Listen = p2ptest.ListenQUIC
	a, err := p2p.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Subscribe(p2p.KindShards); err != nil {
		t.Fatal(err)
	}
	key := p2ptest.Key()
	raw, err := crypto.MarshalPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := peer.IDFromPrivateKey(key)
	boot := a.Addrs()[0].String() + "/p2p/" + a.ID().String()

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperQUICPeer$")
	cmd.Env = append(os.Environ(), "LOWBAND_HELPER_KEY="+hex.EncodeToString(raw), "LOWBAND_HELPER_BOOT="+boot)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) == "ready" {
				ready <- true
			}
		}
	}()
	select {
	case <-ready:
	case <-ctx.Done():
		t.Fatal("the helper peer never joined the topic")
	}
	if err := p2ptest.Poll(ctx, "this host to see the peer on the topic", 50*time.Millisecond, func() bool {
		return len(a.TopicPeers(p2p.KindShards)) == 1
	}); err != nil {
		t.Fatal(err)
	}
	if err := a.Publish(ctx, p2p.KindShards, []byte("before")); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Kill() // SIGKILL: nothing closes its QUIC connection
	cmd.Wait()

	bcfg := p2ptest.Config(key)
	bcfg.Listen, bcfg.Bootstrap = p2ptest.ListenQUIC, []peer.AddrInfo{a.AddrInfo()}
	b, err := p2p.New(ctx, bcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.ID() != id {
		t.Fatal("the restarted peer has another identity")
	}
	sub, err := b.Subscribe(p2p.KindShards)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan time.Time, 1)
	go func() {
		for {
			m, err := sub.Next(ctx)
			if err != nil {
				return
			}
			if !m.Local && strings.HasPrefix(string(m.Data), "after") {
				got <- time.Now()
				return
			}
		}
	}()
	restarted := time.Now()
	// Within the old connection's 30 s idle timeout, with room for a loaded machine.
	deadline := time.After(15 * time.Second)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case at := <-got:
			t.Logf("gossip reached the restarted peer %.1f s after it started; stale connections closed: %d", at.Sub(restarted).Seconds(), a.StaleConnsClosed())
			if a.StaleConnsClosed() == 0 {
				t.Fatal("the message came but no stale connection was closed: the test did not exercise a dead connection")
			}
			return
		case <-deadline:
			t.Fatalf("no gossip reached the restarted peer in 15 s; stale connections closed: %d", a.StaleConnsClosed())
		case <-tick.C:
			_ = a.Publish(ctx, p2p.KindShards, []byte("after "+string(rune('a'+i%26))))
		}
	}
}
