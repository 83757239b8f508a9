package node

import (
	"crypto/ed25519"
	"fmt"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/verify"
)

// envelopeGrowth bounds how much a signed shard's envelope grows past the one
// shardEnvelopeSize measures: the CBOR heads of the payload's length (up to 4 bytes more)
// and of the index and count (up to 4 bytes more each, at verify.MaxShardCount).
const envelopeGrowth = 12

// shardEnvelopeSize is what signing adds to a shard payload on this network: the size of a
// signed shard with an empty payload under the network's IDs and a peer ID of an Ed25519
// identity (the kind verify.ParsePeerID accepts), plus envelopeGrowth. The key is fixed:
// only sizes are measured.
func shardEnvelopeSize(network, run string) (int, error) {
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	pub, err := crypto.UnmarshalEd25519PublicKey(key.Public().(ed25519.PublicKey))
	if err != nil {
		return 0, err
	}
	id, err := peer.IDFromPublicKey(pub)
	if err != nil {
		return 0, err
	}
	h := verify.ShardHeader{Network: network, Run: run, Peer: id.String(), Count: 1, BundleHash: make([]byte, 32)}
	s, err := verify.SignShard(key, h, []byte{})
	if err != nil {
		return 0, fmt.Errorf("measuring the shard envelope: %w", err)
	}
	b, err := s.Marshal()
	if err != nil {
		return 0, fmt.Errorf("measuring the shard envelope: %w", err)
	}
	return len(b) + envelopeGrowth, nil
}
