package p2p

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	dhtpb "github.com/libp2p/go-libp2p-kad-dht/pb"
	kb "github.com/libp2p/go-libp2p-kbucket"
	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"
	"github.com/multiformats/go-multihash"
)

const (
	// nearAsk is how many of the routing table's peers nearest the rendezvous key a near
	// look asks: more than one, so that a single peer withholding records hides nothing.
	nearAsk = 3
	// nearMaxProviders bounds the providers a near look takes from one answer. A near
	// look runs only in a swarm smaller than findTarget; a longer list is a peer's
	// padding, and the whole lookup that follows a near look finding anyone new takes
	// the rest.
	nearMaxProviders = 256
	// nearMaxAddrs bounds the addresses a near look keeps of one provider.
	nearMaxAddrs = 32
)

// rendezvousKey is the DHT key of the run's rendezvous string: the multihash of the
// provider records that go-libp2p's routing discovery advertises and looks up.
func (h *Host) rendezvousKey() (multihash.Multihash, error) {
	return multihash.Sum([]byte(Rendezvous(h.cfg.Network, h.cfg.Run)), multihash.SHA2_256, -1)
}

// nearLook lists the peers that advertised the run's rendezvous string as the host's own
// provider records and the nearAsk peers of its routing table nearest the key hold them,
// asking each of those once. A whole lookup (lookup) asks every peer it learns of until
// none is nearer the key, and in a small swarm that is every DHT node, each answering
// with every advertised peer and the nodes nearest the key, a few KB each: tens of KB a
// lookup in a swarm of 16. An idle host (every advertised peer connected, the swarm
// smaller than findTarget) looks only for newcomers, and every advertisement is put on
// the peers nearest the key, which in such a swarm are the nearest of the host's table.
// A newcomer also finds and dials the host itself: a near look is the second way in,
// not the only one.
func (h *Host) nearLook(ctx context.Context) ([]peer.AddrInfo, error) {
	key, err := h.rendezvousKey()
	if err != nil {
		return nil, err
	}
	var (
		mu       sync.Mutex
		merged   = map[peer.ID][]ma.Multiaddr{}
		order    []peer.ID
		answered int // peers of the table that answered
	)
	add := func(ais []peer.AddrInfo) {
		mu.Lock()
		defer mu.Unlock()
		for _, ai := range ais[:min(len(ais), nearMaxProviders)] {
			if ai.ID == "" {
				continue
			}
			if _, ok := merged[ai.ID]; !ok {
				order = append(order, ai.ID)
			}
			merged[ai.ID] = appendNew(merged[ai.ID], ai.Addrs)
		}
	}
	if local, err := h.dht.ProviderStore().GetProviders(ctx, key); err == nil {
		add(local)
	}
	pm, err := dhtpb.NewProtocolMessenger(h.dht.MessageSender())
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	for _, p := range h.dht.RoutingTable().NearestPeers(kb.ConvertKey(string(key)), nearAsk) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			provs, _, err := pm.GetProviders(ctx, p, key)
			if err != nil {
				h.log.Debug("near look: a peer did not answer", "peer", p, "err", err)
				return
			}
			ais := make([]peer.AddrInfo, 0, min(len(provs), nearMaxProviders))
			for _, ai := range provs[:min(len(provs), nearMaxProviders)] {
				if ai != nil {
					ais = append(ais, *ai)
				}
			}
			add(ais)
			mu.Lock()
			answered++
			mu.Unlock()
		}()
	}
	wg.Wait()
	// The host's own records always answer, and hold at least its own; a look that no
	// peer of its table answered (they left, or withhold) is no look: the next is whole.
	if answered == 0 {
		return nil, errors.New("near look: no peer of the routing table answered")
	}
	out := make([]peer.AddrInfo, len(order))
	for i, id := range order {
		out[i] = peer.AddrInfo{ID: id, Addrs: merged[id]}
	}
	return out, nil
}

// appendNew appends to have the addresses of add it lacks, up to nearMaxAddrs in all.
func appendNew(have, add []ma.Multiaddr) []ma.Multiaddr {
	for _, a := range add {
		if len(have) >= nearMaxAddrs {
			break
		}
		if a == nil {
			continue
		}
		dup := false
		for _, b := range have {
			if a.Equal(b) {
				dup = true
				break
			}
		}
		if !dup {
			have = append(have, a)
		}
	}
	return have
}

// NearRendezvous is the near look an idle host runs (nearLook): the peers that advertised
// the run's rendezvous string, as the host's own provider records and the few peers of its
// routing table nearest the key list them, without connecting to them. The result is
// sorted by ID and may include the host itself.
func (h *Host) NearRendezvous(ctx context.Context) ([]peer.AddrInfo, error) {
	out, err := h.nearLook(ctx)
	if err != nil {
		return nil, err
	}
	for _, ai := range out {
		h.found.add(ai.ID)
	}
	slices.SortFunc(out, func(a, b peer.AddrInfo) int { return strings.Compare(string(a.ID), string(b.ID)) })
	return out, nil
}
