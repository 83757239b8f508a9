package node

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node/attest"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/round"
	"github.com/lowband/lowband/verify"
)

// Adversary kinds: how a node run with --adversary misbehaves, on a network whose spec
// allows it ([testing] allow_adversaries). The statistical kinds change the pseudo-gradient
// the node contributes (its local parameters become base − Δ'); the others change what it
// publishes.
const (
	AdvSignFlip   = "sign-flip"          // Δ' = −Δ
	AdvScaled     = "scaled"             // Δ' = 100·Δ
	AdvNoise      = "noise"              // Δ' = Gaussian noise of the norm of Δ
	AdvALIE       = "alie"               // Δ' = μ − z·σ of the pseudo-gradients it has seen
	AdvIPM        = "ipm"                // Δ' = −ε·μ (inner-product manipulation)
	AdvStale      = "stale"              // Δ' = its pseudo-gradient of staleRounds rounds before
	AdvFreeRide   = "free-ride"          // Δ' = 0: contributes nothing, hopes to earn
	AdvCopy       = "free-ride-copy"     // signs and sends a copy of another peer's contribution
	AdvNaN        = "nan"                // its shards carry a NaN, signed by its epoch key
	AdvEquivocate = "equivocate"         // a second, different, valid shard for each slot
	AdvForged     = "forged-attestation" // its bundle's evidence does not verify
	AdvReplay     = "replay"             // publishes, in round t, its shards of round t−replayLag
	AdvSilent     = "silent"             // never publishes a shard
)

// AdversaryKinds lists every kind, statistical ones first.
var AdversaryKinds = []string{AdvSignFlip, AdvScaled, AdvNoise, AdvALIE, AdvIPM, AdvStale, AdvFreeRide,
	AdvCopy, AdvNaN, AdvEquivocate, AdvForged, AdvReplay, AdvSilent}

// ErrAdversariesNotAllowed is returned (wrapped) when a node is asked to run an adversary
// mode on a network whose spec does not allow them.
var ErrAdversariesNotAllowed = errors.New("the network spec does not allow adversary modes ([testing] allow_adversaries)")

// CheckAdversary is what a node checks before it starts: the kind is known and the network
// allows adversaries, and a node with the public (production) profile never runs on a
// network that allows them, whatever it runs itself.
func CheckAdversary(kind string, cfg *configs.Config, spec *configs.Spec) error {
	if cfg.Profile == configs.ProfilePublic && spec.Testing.AllowAdversaries {
		return fmt.Errorf("network %s allows adversary modes, which the %s profile refuses: use the local profile for test networks", spec.NetworkID(), cfg.Profile)
	}
	if kind == "" {
		return nil
	}
	if !slices.Contains(AdversaryKinds, kind) {
		return fmt.Errorf("unknown adversary kind %q (want one of %v)", kind, AdversaryKinds)
	}
	if !spec.Testing.AllowAdversaries {
		return fmt.Errorf("adversary %s on network %s: %w", kind, spec.NetworkID(), ErrAdversariesNotAllowed)
	}
	return nil
}

// Sizes of the adversary's memory.
const (
	replayLag = 3 // rounds between a shard's round and its replay: past the replay window
	// equivocateAt is the round an equivocating node equivocates in: its third, once every
	// peer holds its bundle and the rounds close on the adaptive deadline.
	equivocateAt = 2
	staleRounds  = 3    // rounds a stale node's pseudo-gradient is behind
	seenRounds   = 4    // own pseudo-gradients alie and ipm estimate the honest ones from
	maxCrafted   = 1024 // crafted messages its own validators remember
)

// adversary makes a node misbehave in one way. The loop's publish and attest and the
// trainer's result go through it (install); its own validators let through what it crafted
// (validators). update runs on the trainer's goroutine, publish and attest on the loop's;
// crafted is shared with the validators under mu.
type adversary struct {
	kind         string
	id           peer.ID
	self         string          // id, canonical
	identity     crypto.PrivKey  // the node's libp2p key, which signs its bundles
	network, run string          // of the bundles it forges
	forged       attest.Producer // forged-attestation: the producer of its bundles
	max          int             // shard payload limit, to decode its own shards

	seen   [][]float64           // its last pseudo-gradients, oldest first (trainer goroutine)
	signer core.Signer           // the signer in use (loop goroutine)
	held   map[uint64][][]byte   // replay: own shards by round, not published (loop goroutine)
	copy   *copier               // free-ride-copy: others' shards and its rounds held back
	mu     sync.Mutex            // guards made and order
	made   map[[32]byte]struct{} // hashes of messages it crafted
	order  [][32]byte            // of made, oldest first
}

// newAdversary returns the adversary of kind for the node whose libp2p key is identity,
// on spec s, whose attestation config is cfg (forged-attestation starts from its producer).
func newAdversary(kind string, identity crypto.PrivKey, s *configs.Spec, cfg configs.AttestConfig, home string) (*adversary, error) {
	id, err := peer.IDFromPrivateKey(identity)
	if err != nil {
		return nil, err
	}
	a := &adversary{kind: kind, id: id, self: id.String(), identity: identity, network: s.NetworkID(), run: s.Run,
		max: s.Training.Compression.MaxShardBytes, held: map[uint64][][]byte{}, made: map[[32]byte]struct{}{}}
	if kind == AdvCopy {
		a.copy = newCopier()
	}
	if kind == AdvForged {
		if a.forged, err = forgedProducer(cfg, home, s.Attest); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// install routes the loop's publish and attest and its trainer's results through a.
func (a *adversary) install(l *loop) {
	publish, att := l.deps.publish, l.deps.attest
	l.deps.publish = func(ctx context.Context, kind string, data []byte) error {
		return a.publish(ctx, publish, kind, data)
	}
	l.deps.attest = func(ctx context.Context, epoch uint64) (core.Signer, error) {
		return a.attest(ctx, att, publish, epoch)
	}
	l.train.tamper = a.update
}

// validators wraps the node's validators: a message the node crafted and publishes itself
// is let through unchecked (its own checks would refuse it, and pubsub would not send it).
// A copier sees each shard they accept.
func (a *adversary) validators(vs map[string]p2p.Validator) {
	for kind, v := range vs {
		vs[kind] = func(ctx context.Context, fwd peer.ID, data []byte) p2p.Result {
			if fwd == a.id && a.crafted(data) {
				return p2p.Accept
			}
			r := v(ctx, fwd, data)
			if r == p2p.Accept && kind == p2p.KindShards && a.copy != nil {
				a.observe(data)
			}
			return r
		}
	}
}

// craft remembers data as crafted by this node.
func (a *adversary) craft(data []byte) {
	h := sha256.Sum256(data)
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.made[h]; ok {
		return
	}
	if len(a.order) >= maxCrafted {
		delete(a.made, a.order[0])
		a.order = a.order[1:]
	}
	a.made[h] = struct{}{}
	a.order = append(a.order, h)
}

func (a *adversary) crafted(data []byte) bool {
	h := sha256.Sum256(data)
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.made[h]
	return ok
}

// attest makes the node's signer for epoch: the honest attestor's, or for
// forged-attestation a bundle whose evidence does not verify, which it publishes itself.
func (a *adversary) attest(ctx context.Context, honest func(context.Context, uint64) (core.Signer, error), publish publishFunc, epoch uint64) (core.Signer, error) {
	if a.kind != AdvForged {
		s, err := honest(ctx, epoch)
		a.signer = s
		return s, err
	}
	s, err := a.forgedSigner(ctx, epoch)
	if err != nil {
		return s, err
	}
	a.signer = s
	a.craft(s.Bundle)
	if err := publish(ctx, p2p.KindAttest, s.Bundle); err != nil {
		return s, fmt.Errorf("publishing the forged bundle: %w", err)
	}
	return s, nil
}

// publish sends what the node publishes, changed as its kind says: shards only.
func (a *adversary) publish(ctx context.Context, publish publishFunc, kind string, data []byte) error {
	if kind != p2p.KindShards {
		return publish(ctx, kind, data)
	}
	var out [][]byte
	var err error
	if a.kind == AdvCopy {
		out, err = a.copyOwn(ctx, publish, data)
	} else {
		out, err = a.shards(data)
	}
	if err != nil {
		return fmt.Errorf("adversary %s: %w", a.kind, err)
	}
	var errs []error
	for _, m := range out {
		errs = append(errs, publish(ctx, kind, m))
	}
	return errors.Join(errs...)
}

// shards returns what the node publishes in place of one of its own signed shards.
func (a *adversary) shards(data []byte) ([][]byte, error) {
	switch a.kind {
	case AdvSilent:
		return nil, nil
	case AdvForged:
		a.craft(data)
		return [][]byte{data}, nil
	case AdvReplay:
		return a.replay(data)
	case AdvNaN:
		bad, err := a.resign(data, nanPayload, nil)
		return [][]byte{bad}, err
	case AdvEquivocate:
		return a.equivocate(data)
	}
	return [][]byte{data}, nil
}

// equivocate sends, in round equivocateAt, a second shard for each of its slots ahead of
// its own: another valid payload, signed by its epoch key, in a header that claims one
// shard more, so that no node completes the contribution from the second alone and closes
// the round before its own arrives to prove the equivocation. Other rounds it sends as an
// honest node does: one offence is enough to test, and further ones would land in
// different rounds' records on different nodes until the nodes agree on records.
func (a *adversary) equivocate(data []byte) ([][]byte, error) {
	s, err := verify.UnmarshalShard(data, a.max)
	if err != nil {
		return nil, err
	}
	if s.Header.Round != equivocateAt {
		return [][]byte{data}, nil
	}
	other, err := a.resign(data, variantPayload, func(h *verify.ShardHeader) { h.Count++ })
	return [][]byte{other, data}, err
}

// replay holds the shard back and returns the shards of replayLag rounds before, whose
// round every peer has closed: a replay.
func (a *adversary) replay(data []byte) ([][]byte, error) {
	s, err := verify.UnmarshalShard(data, a.max)
	if err != nil {
		return nil, err
	}
	r := s.Header.Round
	a.held[r] = append(a.held[r], data)
	if r < replayLag {
		return nil, nil
	}
	old := a.held[r-replayLag]
	for k := range a.held {
		if k <= r-replayLag {
			delete(a.held, k)
		}
	}
	for _, d := range old {
		a.craft(d)
	}
	return old, nil
}

// resign returns the shard with its payload changed by change (and its header by header,
// if set), signed again by the node's epoch key: a well-signed shard of the node's own.
func (a *adversary) resign(data []byte, change func([]byte) ([]byte, error), header func(*verify.ShardHeader)) ([]byte, error) {
	s, err := verify.UnmarshalShard(data, a.max)
	if err != nil {
		return nil, err
	}
	payload, err := change(s.Payload)
	if err != nil {
		return nil, err
	}
	if header != nil {
		header(&s.Header)
	}
	out, err := verify.SignShard(a.signer.Key, s.Header, payload)
	if err != nil {
		return nil, err
	}
	b, err := out.Marshal()
	if err != nil {
		return nil, err
	}
	a.craft(b)
	return b, nil
}

// update turns the local parameters of a round's work into those the node hands its
// core: base − Δ' for the pseudo-gradient Δ = base − local, where base is the start of
// the work. The wire kinds leave them as they are.
func (a *adversary) update(s round.Start, local []training.Tensor) ([]training.Tensor, error) {
	base := training.Flatten(s.Params)
	loc := training.Flatten(local)
	if len(base) != len(loc) {
		return nil, fmt.Errorf("adversary: %d parameters at the start, %d after", len(base), len(loc))
	}
	delta := make([]float64, len(base))
	for i := range base {
		delta[i] = base[i] - loc[i]
	}
	bad, ok := a.pseudoGradient(s.Round, delta)
	if !ok {
		return local, nil
	}
	for i := range base {
		loc[i] = base[i] - bad[i]
	}
	return training.Unflatten(loc, local)
}

// startAdversary makes the node's training misbehave as Options.Adversary says, and says
// so loudly: in the log and in GET /status.
func (n *Node) startAdversary(key crypto.PrivKey) error {
	kind := n.opts.Adversary
	a, err := newAdversary(kind, key, n.opts.Spec, n.opts.Config.Attest, n.opts.Home.Dir)
	if err != nil {
		return fmt.Errorf("adversary %s: %w", kind, err)
	}
	a.install(n.train.loop)
	n.train.prog.setAdversary(kind)
	n.adv = a
	n.log.Warn("ADVERSARY MODE: this node misbehaves on purpose; the network spec allows it for testing", "kind", kind)
	return nil
}
