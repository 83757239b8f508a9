package p2p

import (
	"slices"

	dht "github.com/libp2p/go-libp2p-kad-dht"
	"github.com/libp2p/go-libp2p/config"
	ma "github.com/multiformats/go-multiaddr"
	manet "github.com/multiformats/go-multiaddr/net"
)

// addrsFactory picks what the host announces (Addrs, identify, its signed peer record):
// the announce addresses when there are some (with the /p2p-circuit addresses of its
// relay reservations), else with PublicOnly the public ones of what libp2p found
// (listen, interface, observed, relayed through a public relay), else nil for
// libp2p's own choice.
func addrsFactory(announce []ma.Multiaddr, publicOnly bool) config.AddrsFactory {
	switch {
	case len(announce) > 0:
		return func(found []ma.Multiaddr) []ma.Multiaddr {
			return append(slices.Clone(announce), ma.FilterAddrs(found, isRelayed)...)
		}
	case publicOnly:
		return func(addrs []ma.Multiaddr) []ma.Multiaddr { return publicAddrs(addrs, nil) }
	}
	return nil
}

// publicAddrs returns the addresses of addrs others can dial over the internet (no
// loopback, private, link-local or unspecified IP; see manet.IsPublicAddr) and those
// in keep, in their order. It allocates a new slice.
func publicAddrs(addrs, keep []ma.Multiaddr) []ma.Multiaddr {
	return ma.FilterAddrs(addrs, func(a ma.Multiaddr) bool {
		return manet.IsPublicAddr(a) || slices.ContainsFunc(keep, a.Equal)
	})
}

// isRelayed tells whether a is an address through a relay (/p2p-circuit).
func isRelayed(a ma.Multiaddr) bool {
	_, err := a.ValueForProtocol(ma.P_CIRCUIT)
	return err == nil
}

// dhtAddrOptions are the DHT's filters for a public-only host, those of kad-dht's
// public (WAN) DHT: addresses learned of others and put in the host's own provider
// records are public ones (or the host's announce addresses), and only peers with a
// public address are queried or taken into the routing table.
func dhtAddrOptions(announce []ma.Multiaddr, publicOnly bool) []dht.Option {
	if !publicOnly {
		return nil
	}
	return []dht.Option{
		dht.AddressFilter(func(addrs []ma.Multiaddr) []ma.Multiaddr { return publicAddrs(addrs, announce) }),
		dht.QueryFilter(dht.PublicQueryFilter),
		dht.RoutingTableFilter(dht.PublicRoutingTableFilter),
	}
}
