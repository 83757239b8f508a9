package node

import (
	"crypto/ed25519"
	"testing"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/verify"
)

// TestSignedContributionWithinTargetRatio: on the default charlm network (target ratio
// 1000), what a node sends for a round, its shards signed and marshalled as gossip carries
// them, is at most one dense fp32 pseudo-gradient over the ratio, for pseudo-gradients of
// several sizes.
func TestSignedContributionWithinTargetRatio(t *testing.T) {
	s := specFor(t, configs.TaskCharLM)
	ratio := s.Training.Compression.TargetRatio
	if ratio == 0 {
		t.Fatal("the default charlm spec sets no target ratio")
	}
	p := mustParams(t, s)
	m, err := p.NewModel()
	if err != nil {
		t.Fatal(err)
	}
	dense := 4 * training.NumParams(m.Params())
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	pub, _ := crypto.UnmarshalEd25519PublicKey(key.Public().(ed25519.PublicKey))
	id, _ := peer.IDFromPublicKey(pub)
	for _, scale := range []float64{0.01, 1, 10} {
		payloads := shardsOf(t, p, realDelta(t, p, scale))
		total := 0
		for i, pl := range payloads {
			h := verify.ShardHeader{Network: s.NetworkID(), Run: s.Run, Round: 1 << 40, Peer: id.String(),
				Index: uint32(i), Count: uint32(len(payloads)), BundleHash: make([]byte, 32)}
			sh, err := verify.SignShard(key, h, pl)
			if err != nil {
				t.Fatal(err)
			}
			b, err := sh.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			total += len(b)
		}
		if limit := int(float64(dense) / ratio); total > limit {
			t.Errorf("scale %v: %d signed bytes in %d shards, over dense %d / %v = %d", scale, total, len(payloads), dense, ratio, limit)
		}
	}
}
