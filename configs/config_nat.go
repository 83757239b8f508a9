package configs

import (
	"errors"
	"fmt"
	"math"
)

// NATConfig is how a node gets through NAT and what a bootstrap node offers the nodes
// behind one. Its keys sit in [p2p].
//
// The relay service's circuits carry no per-circuit limit by default: go-libp2p marks a
// circuit with one (its defaults are 2 minutes and 128 KiB) as a limited connection, over
// which neither gossip nor the DHT opens a stream, so a node that hole punching cannot get
// through would never join the mesh. Gossip of compressed shards (a few KiB each) through
// a relay is what a home node costs the bootstrap node; reservations and circuits per peer
// bound how many such nodes one bootstrap node carries.
type NATConfig struct {
	AutoNAT      bool `toml:"autonat" comment:"AutoNAT v2: peers dial each of this node's addresses back to tell which they can reach (and it does the same for them); off on loopback"`
	NATService   bool `toml:"nat_service" comment:"dial peers back to tell them whether they are reachable (AutoNAT v1 service, rate-limited)"`
	HolePunching bool `toml:"hole_punching" comment:"turn a relayed connection into a direct one through the NAT (DCUtR)"`
	RelayClient  bool `toml:"relay_client" comment:"when AutoNAT finds this node unreachable, reserve a slot on the bootstrap peers (circuit relay v2) and announce addresses through them"`
	// Reachability, when set, takes the place of AutoNAT's verdict. A bootstrap node is
	// public by definition (its address is in the network spec), and AutoNAT would not
	// find it so where every other node is behind NAT: a node that finds itself private
	// stops serving AutoNAT, so the bootstrap node would stay "unknown" and never start
	// its relay service.
	Reachability string `toml:"reachability" comment:"public or private in place of AutoNAT's verdict (public: the relay service and NAT service start at once; bootstrap nodes); empty: AutoNAT decides"`
	RelayService bool   `toml:"relay_service" comment:"relay for nodes behind NAT (circuit relay v2), once AutoNAT finds this node reachable; bootstrap nodes"`
	// RelayReservations is how many nodes may hold a slot at once.
	RelayReservations int `toml:"relay_reservations" comment:"relay service: nodes holding a slot at once"`
	// RelayCircuits is how many relayed connections one node may have open at once.
	RelayCircuits int `toml:"relay_circuits" comment:"relay service: relayed connections open at once per node (a gossip mesh is at most 12 peers, plus DHT and fetches)"`
	// RelayCircuitSeconds and RelayCircuitBytes limit each relayed connection; 0 and 0 is
	// no limit (the default), which is what gossip over a relay needs.
	RelayCircuitSeconds int   `toml:"relay_circuit_seconds" comment:"relay service: seconds one relayed connection may last; 0 with relay_circuit_bytes 0 = no limit. A limited connection carries hole punching only, no gossip"`
	RelayCircuitBytes   int64 `toml:"relay_circuit_bytes" comment:"relay service: bytes one relayed connection may carry each way; 0 with relay_circuit_seconds 0 = no limit"`
}

// defaultNATConfig is the relay limits every profile starts from; the profiles turn on
// what they use.
func defaultNATConfig() NATConfig { return NATConfig{RelayReservations: 128, RelayCircuits: 16} }

func (n *NATConfig) validate() error {
	if n.Reachability != "" && n.Reachability != "public" && n.Reachability != "private" {
		return &KeyError{Key: "reachability", Err: fmt.Errorf("%q: want public, private or empty", n.Reachability)}
	}
	if n.RelayReservations <= 0 {
		return &KeyError{Key: "relay_reservations", Err: fmt.Errorf("%d: want at least 1", n.RelayReservations)}
	}
	if n.RelayCircuits <= 0 {
		return &KeyError{Key: "relay_circuits", Err: fmt.Errorf("%d: want at least 1", n.RelayCircuits)}
	}
	if n.RelayCircuitSeconds < 0 || n.RelayCircuitSeconds > math.MaxUint32 {
		return &KeyError{Key: "relay_circuit_seconds", Err: fmt.Errorf("%d: want 0 (no limit) or a number of seconds", n.RelayCircuitSeconds)}
	}
	if n.RelayCircuitBytes < 0 {
		return &KeyError{Key: "relay_circuit_bytes", Err: fmt.Errorf("%d: want 0 (no limit) or a number of bytes", n.RelayCircuitBytes)}
	}
	both := errors.New("set relay_circuit_seconds and relay_circuit_bytes together, or neither")
	if n.RelayCircuitSeconds > 0 && n.RelayCircuitBytes == 0 {
		return &KeyError{Key: "relay_circuit_seconds", Err: both}
	}
	if n.RelayCircuitBytes > 0 && n.RelayCircuitSeconds == 0 {
		return &KeyError{Key: "relay_circuit_bytes", Err: both}
	}
	return nil
}
