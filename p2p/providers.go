package p2p

import (
	"context"
	"fmt"

	"github.com/ipfs/go-cid"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/libp2p/go-libp2p/core/peerstore"
	"github.com/multiformats/go-multihash"
)

// providerAddrTTL is how long a found provider's addresses are kept for dialing it.
var providerAddrTTL = peerstore.TempAddrTTL

// providerCID is the DHT key of an object named by a SHA-256 digest: a raw CIDv1 of that
// digest, as a content-addressed block of those bytes would have.
func providerCID(key [32]byte) (cid.Cid, error) {
	mh, err := multihash.Encode(key[:], multihash.SHA2_256)
	if err != nil {
		return cid.Undef, err
	}
	return cid.NewCidV1(cid.Raw, mh), nil
}

// Provide announces in the DHT that this host serves the object named by key (a SHA-256
// digest): a provider record, put on the peers closest to the key. It blocks until they
// have it or ctx ends. Announcements expire after the DHT's provider validity (48 hours by
// default): a host that keeps serving the object announces it again.
func (h *Host) Provide(ctx context.Context, key [32]byte) error {
	c, err := providerCID(key)
	if err != nil {
		return err
	}
	if err := h.dht.Provide(ctx, c, true); err != nil {
		return fmt.Errorf("providing %x: %w", key[:8], err)
	}
	return nil
}

// FindProviders asks the DHT which peers announced key, until it found limit of them or
// ctx ends. The host itself is left out; the providers' addresses go to the peerstore, so
// that a stream to them can be opened.
func (h *Host) FindProviders(ctx context.Context, key [32]byte, limit int) ([]peer.ID, error) {
	c, err := providerCID(key)
	if err != nil {
		return nil, err
	}
	var out []peer.ID
	for ai := range h.dht.FindProvidersAsync(ctx, c, limit) {
		if ai.ID == h.h.ID() {
			continue
		}
		h.h.Peerstore().AddAddrs(ai.ID, ai.Addrs, providerAddrTTL)
		out = append(out, ai.ID)
	}
	return out, nil
}
