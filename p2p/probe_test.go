package p2p_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/p2p/p2ptest"
	"github.com/lowband/lowband/version"
)

func TestProbeReachesAPeerThatSpeaksTheNetworksDHT(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := p2ptest.Start(ctx, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pr, err := p2p.NewProber()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()

	r := pr.Probe(ctx, s.Boot.AddrInfo(), p2p.DHTProtocol(p2ptest.Network))
	if r.Stage != p2p.StageDone || r.Err != nil || r.Addr == "" || r.Took <= 0 || r.Agent != version.Agent() {
		t.Errorf("probe of a live bootstrap: %+v", r)
	}
	// The same peer, asked for another network's DHT: connected, wrong protocol.
	r = pr.Probe(ctx, s.Boot.AddrInfo(), p2p.DHTProtocol("other-00000000"))
	if r.Stage != p2p.StageProtocol || r.Err == nil {
		t.Errorf("probe for another network's DHT: %+v", r)
	}
	// Another peer ID at the bootstrap's address: the handshake refuses it.
	other, _ := peer.IDFromPrivateKey(p2ptest.Key())
	r = pr.Probe(ctx, peer.AddrInfo{ID: other, Addrs: s.Boot.AddrInfo().Addrs}, p2p.DHTProtocol(p2ptest.Network))
	if r.Stage != p2p.StageDial || r.Err == nil {
		t.Errorf("probe of the wrong peer ID: %+v", r)
	}
}

func TestProbeOfADeadAddressStopsAtDial(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close() // nothing listens there any more
	a, _ := ma.NewMultiaddr(fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", port))
	id, _ := peer.IDFromPrivateKey(p2ptest.Key())
	pr, err := p2p.NewProber()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	r := pr.Probe(ctx, peer.AddrInfo{ID: id, Addrs: []ma.Multiaddr{a}}, p2p.DHTProtocol(p2ptest.Network))
	if r.Stage != p2p.StageDial || r.Err == nil || r.Addr != "" {
		t.Errorf("probe of a dead address: %+v", r)
	}
}
