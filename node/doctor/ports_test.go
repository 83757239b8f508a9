package doctor

import (
	"fmt"
	"net"
	"testing"

	"github.com/lowband/lowband/node"
)

// takeTCP holds a TCP port on 127.0.0.1 for the test's duration and returns it.
func takeTCP(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l.Addr().(*net.TCPAddr).Port
}

// freeTCP returns a TCP port that was free a moment ago.
func freeTCP(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestListenPorts(t *testing.T) {
	taken := takeTCP(t)
	free := freeTCP(t)
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	udpTaken := udp.LocalAddr().(*net.UDPAddr).Port
	tcp := func(port int) string { return fmt.Sprintf("/ip4/127.0.0.1/tcp/%d", port) }

	want(t, "port 0", listenPort("/ip4/127.0.0.1/tcp/0", nil), OK, "picked at start")
	want(t, "free port", listenPort(tcp(free), nil), OK, "is free")
	want(t, "taken port", listenPort(tcp(taken), nil), Fail, "in use by another process", "ss -ltnp", "p2p.listen")
	want(t, "taken udp port", listenPort(fmt.Sprintf("/ip4/127.0.0.1/udp/%d/quic-v1", udpTaken), nil), Fail, "udp", "ss -lunp")

	mine := &Running{Status: node.Status{Addresses: []string{tcp(taken) + "/p2p/12D3KooWGRUVh6zGsDLTPHDA5ib1hLwrkdZLkb7H2zxEk2oHVqbU"}}}
	want(t, "port held by this node", listenPort(tcp(taken), mine), OK, "this home's running node")
	other := &Running{Status: node.Status{Addresses: []string{tcp(free)}}}
	want(t, "taken while this node runs elsewhere", listenPort(tcp(taken), other), Warn, "does not report that port")

	want(t, "address not on this machine", listenPort("/ip4/203.0.113.7/tcp/4001", nil), Fail, "cannot listen", "not on this machine")
	want(t, "no port", listenPort("/ip4/127.0.0.1", nil), Fail, "no tcp or udp port")
	want(t, "not a multiaddr", listenPort("127.0.0.1:4001", nil), Fail, "not a multiaddr")
}

func TestAPIPort(t *testing.T) {
	taken := fmt.Sprintf("127.0.0.1:%d", takeTCP(t))
	want(t, "port 0", apiPort("127.0.0.1:0", nil), OK, "api.addr")
	want(t, "free", apiPort(fmt.Sprintf("127.0.0.1:%d", freeTCP(t)), nil), OK, "is free")
	want(t, "taken", apiPort(taken, nil), Fail, "in use by another process", "api.listen")
	want(t, "held by this node", apiPort(taken, &Running{APIAddr: taken}), OK, "this home's running node")
	want(t, "not host:port", apiPort("4001", nil), Fail, "api.listen")
}

func TestPortsCoversEveryListenAddressAndTheAPI(t *testing.T) {
	c, _ := loaded(t, newHome(t))
	rs := Ports(c, nil)
	if len(rs) != len(c.P2P.Listen)+1 || Failed(rs) {
		t.Errorf("ports of a fresh local home: %+v", rs)
	}
}
