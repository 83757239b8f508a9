package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"

	"github.com/libp2p/go-libp2p/core/peer"
	ma "github.com/multiformats/go-multiaddr"

	"github.com/lowband/lowband/configs"
)

// maxCachedPeers bounds the peers cache, on write and on read.
const maxCachedPeers = 256

type cachedPeer struct {
	ID    string   `json:"id"`
	Addrs []string `json:"addrs"`
}

// loadPeerCache reads the peers a node saw in its last run. A missing file is an empty
// cache; a damaged one is reported so the caller can log it, and is otherwise ignored: it
// is only a hint for finding the network again.
func loadPeerCache(path string) ([]peer.AddrInfo, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	var raw []cachedPeer
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("peers cache %s is damaged: %w", path, err)
	}
	if len(raw) > maxCachedPeers {
		raw = raw[:maxCachedPeers]
	}
	var out []peer.AddrInfo
	for _, c := range raw {
		id, err := peer.Decode(c.ID)
		if err != nil {
			continue
		}
		ai := peer.AddrInfo{ID: id}
		for _, s := range c.Addrs {
			if a, err := ma.NewMultiaddr(s); err == nil {
				ai.Addrs = append(ai.Addrs, a)
			}
		}
		if len(ai.Addrs) > 0 {
			out = append(out, ai)
		}
	}
	return out, nil
}

// savePeerCache writes a uniform random sample of at most maxCachedPeers of peers
// atomically, skipping the node itself and peers without addresses. The sample is drawn
// with rng (reservoir sampling), so no choice of key buys a place: a peer that grinds
// IDs that sort first, or any other pattern, gets only its share of the cache.
func savePeerCache(path string, self peer.ID, peers []peer.AddrInfo, rng *rand.Rand) error {
	sample := make([]peer.AddrInfo, 0, maxCachedPeers)
	seen := 0
	for _, p := range peers {
		if p.ID == self || len(p.Addrs) == 0 {
			continue
		}
		seen++
		if len(sample) < maxCachedPeers {
			sample = append(sample, p)
		} else if j := rng.IntN(seen); j < maxCachedPeers {
			sample[j] = p
		}
	}
	raw := make([]cachedPeer, 0, len(sample))
	for _, p := range sample {
		c := cachedPeer{ID: p.ID.String()}
		for _, a := range p.Addrs {
			c.Addrs = append(c.Addrs, a.String())
		}
		raw = append(raw, c)
	}
	data, err := json.MarshalIndent(raw, "", "  ")
	if err != nil {
		return err
	}
	return configs.WriteFileAtomic(path, data, 0o644)
}
