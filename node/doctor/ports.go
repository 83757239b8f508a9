package doctor

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	ma "github.com/multiformats/go-multiaddr"

	"github.com/lowband/lowband/configs"
)

// Ports checks that each listen address (p2p and local API) can be bound: a fixed port
// must be free, or held by this home's running node.
func Ports(c *configs.Config, run *Running) []Result {
	var out []Result
	for _, a := range c.P2P.Listen {
		out = append(out, listenPort(a, run))
	}
	return append(out, apiPort(c.API.Listen, run))
}

func listenPort(addr string, run *Running) Result {
	const check = "listen"
	network, hostport, err := bindTarget(addr)
	if err != nil {
		return fail(check, err.Error(), "fix p2p.listen in config.toml")
	}
	_, port, _ := net.SplitHostPort(hostport)
	if port == "0" {
		return ok(check, "%s: a free %s port is picked at start", addr, network)
	}
	err = tryBind(network, hostport)
	switch {
	case err == nil:
		return ok(check, "%s %s is free", network, hostport)
	case !errors.Is(err, syscall.EADDRINUSE):
		return fail(check, fmt.Sprintf("cannot listen on %s %s: %v", network, hostport, err), bindFix(err))
	case run != nil && run.hasPort(network, port):
		return ok(check, "%s %s is in use by this home's running node", network, hostport)
	case run != nil:
		return warn(check, fmt.Sprintf("%s %s is in use; this home's node runs but does not report that port", network, hostport),
			"if p2p.announce is set this may be the node itself; otherwise find the holder with: "+holderCmd(network, port))
	}
	return fail(check, fmt.Sprintf("%s %s is in use by another process", network, hostport),
		"stop it (find it with: "+holderCmd(network, port)+") or change p2p.listen in config.toml")
}

func apiPort(hostport string, run *Running) Result {
	const check = "api"
	if _, port, err := net.SplitHostPort(hostport); err != nil {
		return fail(check, "api.listen "+err.Error(), "fix api.listen in config.toml")
	} else if port == "0" {
		return ok(check, "%s: a free port is picked at start and written to api.addr", hostport)
	}
	err := tryBind("tcp", hostport)
	switch {
	case err == nil:
		return ok(check, "tcp %s is free", hostport)
	case !errors.Is(err, syscall.EADDRINUSE):
		return fail(check, fmt.Sprintf("cannot listen on tcp %s: %v", hostport, err), bindFix(err))
	case run != nil && run.APIAddr == hostport:
		return ok(check, "tcp %s is in use by this home's running node", hostport)
	}
	_, port, _ := net.SplitHostPort(hostport)
	return fail(check, fmt.Sprintf("tcp %s is in use by another process", hostport),
		"stop it (find it with: "+holderCmd("tcp", port)+") or change api.listen in config.toml")
}

// bindTarget turns a listen multiaddr into a network ("tcp" or "udp") and host:port.
func bindTarget(addr string) (network, hostport string, err error) {
	m, err := ma.NewMultiaddr(addr)
	if err != nil {
		return "", "", fmt.Errorf("%q is not a multiaddr: %w", addr, err)
	}
	var host string
	for _, p := range []int{ma.P_IP4, ma.P_IP6} {
		if v, err := m.ValueForProtocol(p); err == nil {
			host = v
		}
	}
	if host == "" {
		return "", "", fmt.Errorf("%q names no IP address to listen on", addr)
	}
	for _, t := range []struct {
		code int
		name string
	}{{ma.P_TCP, "tcp"}, {ma.P_UDP, "udp"}} {
		if v, err := m.ValueForProtocol(t.code); err == nil {
			return t.name, net.JoinHostPort(host, v), nil
		}
	}
	return "", "", fmt.Errorf("%q has no tcp or udp port", addr)
}

// tryBind listens on hostport and closes at once.
func tryBind(network, hostport string) error {
	if network == "udp" {
		c, err := net.ListenPacket("udp", hostport)
		if err == nil {
			c.Close()
		}
		return err
	}
	l, err := net.Listen("tcp", hostport)
	if err == nil {
		l.Close()
	}
	return err
}

func bindFix(err error) string {
	switch {
	case errors.Is(err, syscall.EACCES):
		return "ports under 1024 need privileges: pick a port of 1024 or more"
	case errors.Is(err, syscall.EADDRNOTAVAIL):
		return "that IP address is not on this machine: listen on 0.0.0.0 or one of its addresses"
	}
	return "change the address in config.toml"
}

func holderCmd(network, port string) string {
	flag := "-ltnp"
	if network == "udp" {
		flag = "-lunp"
	}
	return "ss " + flag + " 'sport = :" + port + "'"
}

// hasPort reports whether the running node reports an address on network (tcp or udp)
// with this port.
func (r *Running) hasPort(network, port string) bool {
	code := ma.P_TCP
	if network == "udp" {
		code = ma.P_UDP
	}
	for _, a := range r.Status.Addresses {
		m, err := ma.NewMultiaddr(a)
		if err != nil {
			continue
		}
		if v, err := m.ValueForProtocol(code); err == nil && v == port {
			return true
		}
	}
	return false
}
