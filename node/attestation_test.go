package node

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/verify"
)

// TestAttestorRegistersAndPublishesOwnBundle: the node's bundle of an epoch binds a fresh
// ephemeral key to its peer ID and epoch, verifies under its own network's policy, is
// held (so it is served by hash) and published on the attest topic.
func TestAttestorRegistersAndPublishesOwnBundle(t *testing.T) {
	home, c, s := newHome(t)
	p, err := NewParams(s)
	if err != nil {
		t.Fatal(err)
	}
	id, err := home.LoadIdentity()
	if err != nil {
		t.Fatal(err)
	}
	reg := newRegistry(p.Checker, nil, nil)
	var published [][]byte
	a, err := newAttestor(c.Attest, home.Dir, id, s, reg, func(_ context.Context, kind string, data []byte) error {
		if kind != p2p.KindAttest {
			return fmt.Errorf("published on %s", kind)
		}
		published = append(published, data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	self, _ := peer.IDFromPrivateKey(id)
	var keys []ed25519.PublicKey
	for epoch := range uint64(2) {
		sg, err := a.attest(context.Background(), epoch)
		if err != nil {
			t.Fatal(err)
		}
		b, err := verify.UnmarshalBundle(sg.Bundle)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case b.Hash() != sg.BundleHash || !bytes.Equal(reg.bundle(sg.BundleHash), sg.Bundle):
			t.Fatalf("epoch %d: bundle not held under its hash", epoch)
		case len(published) != int(epoch)+1 || !bytes.Equal(published[epoch], sg.Bundle):
			t.Fatalf("epoch %d: published %d bundles", epoch, len(published))
		case b.Epoch != epoch || b.PeerID != self.String() || !bytes.Equal(b.EphemeralKey, sg.Key.Public().(ed25519.PublicKey)):
			t.Fatalf("epoch %d: bundle binds epoch %d, peer %s, another key", epoch, b.Epoch, b.PeerID)
		}
		keys = append(keys, sg.Key.Public().(ed25519.PublicKey))
	}
	if keys[0].Equal(keys[1]) {
		t.Fatal("the same ephemeral key in two epochs")
	}
	failing := &attestor{producer: a.producer, identity: a.identity, network: "another-net", run: s.Run, reg: reg, publish: a.publish, rand: a.rand}
	if _, err := failing.attest(context.Background(), 0); err == nil || len(published) != 2 {
		t.Fatalf("a bundle that does not verify: %v, published %d", err, len(published))
	}
}

// TestRegistryVerifiesAtNominalEpochTime: a bundle is verified at the checker's time of
// its epoch (never the clock), and held until the bound pushes out the least
// recently used.
func TestRegistryVerifiesAtNominalEpochTime(t *testing.T) {
	fx := incentivestest.New("net-a", "run-a")
	chk := fx.Checker()
	var mu sync.Mutex
	var asked []uint64
	chk.EpochTime = func(e uint64) time.Time {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, e)
		return time.Unix(1_800_000_000, 0)
	}
	spent := &cpuMeter{}
	reg := newRegistry(chk, nil, spent)
	first := fx.Bundle("peer-0", "")
	if _, err := reg.add(first, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.add(first, 0); err != nil || len(asked) != 2 || asked[0] != 0 || spent.seconds() <= 0 {
		t.Fatalf("verified at epochs %v (err %v, %v s)", asked, err, spent.seconds())
	}
	if _, err := reg.add(fx.Bundle("bad", verify.ClassUntrustedRoot), 0); verify.ClassOf(err) != verify.ClassUntrustedRoot {
		t.Fatalf("failing bundle: %v", err)
	}
	if _, err := reg.add([]byte("junk"), 0); err == nil {
		t.Fatal("junk held")
	}
	for i := 1; i <= maxVerifiedBundles; i++ {
		if _, err := reg.add(fx.Bundle(fmt.Sprint("peer-", i), ""), 0); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := verify.UnmarshalBundle(first)
	last, _ := verify.UnmarshalBundle(fx.Bundle(fmt.Sprint("peer-", maxVerifiedBundles), ""))
	if reg.bundle(b.Hash()) != nil || reg.bundle(last.Hash()) == nil || reg.ok.order.Len() != maxVerifiedBundles {
		t.Fatalf("registry of %d bundles: oldest held %v, newest held %v", reg.ok.order.Len(), reg.bundle(b.Hash()) != nil, reg.bundle(last.Hash()) != nil)
	}
	if _, ok := reg.get([32]byte{}); ok {
		t.Fatal("unknown hash held")
	}
}
