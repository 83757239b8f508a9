package node

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/checkpoint"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/node/store"
	"github.com/lowband/lowband/verify"
)

// shards fetches the shards rec lists, each by round and payload CID: from the node's
// own store when it holds it (a round before a split it rewinds over), else from the
// signers of rec first (each checked the shard's signature when it took it), then from the
// contribution's peer, then from at most joinPeers other staked peers the catch-up asks (a
// peer that included the contribution in a round of its own lineage keeps its shards
// too): each must be a shard of that round, peer and CID. The first shard nobody serves
// stops the others' fetches.
func (j *joiner) shards(ctx context.Context, rec *incentives.Record, signers []peer.ID) ([]store.Shard, error) {
	ctx, cancel := context.WithCancel(ctx) // one shard nobody serves fails the round: stop the others
	defer cancel()
	own := j.ownShards(rec.Round)
	var mu sync.Mutex
	var out []store.Shard
	var errs []error
	var wg sync.WaitGroup
	sem := make(chan struct{}, joinParallel)
	for _, c := range rec.Contributions {
		order := slices.Clone(signers)
		if id, err := peer.Decode(c.Peer); err == nil && !slices.Contains(order, id) {
			order = append(order, id)
		}
		extra := 0
		for _, p := range j.peers {
			if extra == joinPeers {
				break // a shard nobody serves costs an ask of each peer in order
			}
			if !slices.Contains(order, p) && j.trust != nil && j.trust.Power(p.String()) > 0 {
				order = append(order, p)
				extra++
			}
		}
		order = slices.DeleteFunc(order, func(p peer.ID) bool { return p == j.self }) // its own store is read first
		for _, cid := range c.Shards {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				sh, err := j.shard(ctx, rec.Round, c.Peer, len(c.Shards), cid, own[shardKey(c.Peer, cid)], order)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					cancel()
					return
				}
				out = append(out, sh)
			}()
		}
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, fmt.Errorf("round %d: %w", rec.Round, errors.Join(errs...))
	}
	return out, nil
}

// ownShards is the node's stored shards of round r by peer and payload CID (shardKey; none
// when it holds no such round, or its entries do not read: the peers have them), read
// once per round replayed rather than once per shard. Not by CID alone: a peer that copies
// another's payload has a shard of that CID in the round too.
func (j *joiner) ownShards(r uint64) map[string][]byte {
	shards, err := j.n.ledger.st.Shards(r)
	if err != nil {
		j.n.log.Warn("catching up: its own stored shards of a round do not read; asking the peers", "round", r, "err", err)
		return nil
	}
	out := make(map[string][]byte, len(shards))
	for _, sh := range shards {
		if v, err := verify.UnmarshalShard(sh.Data, j.rep.maxPayload); err == nil {
			out[shardKey(sh.Peer, v.Header.PayloadCID)] = sh.Data
		}
	}
	return out
}

// shard asks the peers in turn for the stored shard of round r with payload CID cid,
// until one sends a shard of this network and run, of r, of peer owner, one of count (the
// shards the record lists for owner), whose payload hashes to cid. Its index is not bound
// by anything the record signs (the header's signature is the attested key's, and the
// replay checks no attestation): a peer that serves the right payload under another
// index makes the round's replay miss the record's root, so the catch-up fails; it cannot
// make it take a wrong state. The signers, who took the shard with its signature checked,
// are asked before the contribution's own peer, which could sign such a header.
func (j *joiner) shard(ctx context.Context, r uint64, owner string, count int, cid, own []byte, order []peer.ID) (store.Shard, error) {
	for i := -1; i < len(order); i++ {
		var data []byte
		if i < 0 { // its own store first (own): checked as a peer's answer
			data = own
		} else if p := order[i]; ctx.Err() == nil {
			got, err := j.fetch.fetch(ctx, p, storedShardRequest(r, owner, cid))
			if err != nil {
				continue
			}
			j.bytes.Add(int64(len(got)))
			data = got
		}
		if data == nil {
			continue
		}
		s, err := verify.UnmarshalShard(data, j.rep.maxPayload)
		if err != nil {
			continue
		}
		h := &s.Header
		if h.Network == j.rep.network && h.Run == j.rep.run && h.Round == r && h.Peer == owner && int(h.Count) == count &&
			bytes.Equal(h.PayloadCID, cid) && bytes.Equal(verify.PayloadCID(s.Payload), cid) {
			return store.Shard{Peer: owner, Index: h.Index, Data: data}, nil
		}
	}
	return store.Shard{}, fmt.Errorf("no peer sent the shard %x of %s", cid[:min(8, len(cid))], owner)
}

// noneMajority reports whether the peers that answered that they closed no round (none)
// carry more than half of the genesis ledger's voting power. Then every majority has a
// voter among them, so no majority closed a round: the node starts at genesis without
// waiting to ask every genesis peer (a node of a large swarm is connected to a few dozen
// of them, and waited its whole wait). Peers that did not answer count for nothing, nor
// does the node itself (a staker whose store was lost may have voted). Heads of a
// minority among those not asked are no canonical history: the majority starting at
// genesis outvotes them, and they repair onto its rounds.
func noneMajority(genesis *incentives.State, none []peer.ID) bool {
	var w uint64
	seen := map[peer.ID]bool{}
	for _, p := range none {
		if !seen[p] {
			seen[p] = true
			w += genesis.Power(p.String())
		}
	}
	return 2*w > genesis.TotalPower()
}

// joinRun brings the node into the run when its store is at genesis and its peers are
// past it (joiner): it waits for their heads as the loop waits for the genesis peers,
// joins, and on a failure tries again until ctx ends. Called by Run before the loop.
func (n *Node) joinRun(ctx context.Context) error {
	if n.ledger.state.Load().Round != 0 {
		return n.catchUp(ctx)
	}
	defer func() { n.train.resumed = resumePoint{} }() // θ_0, which the core holds a copy of
	j := n.newJoiner()
	j.trust = n.ledger.state.Load() // genesis
	began, wait := time.Now(), joinWait
	var genesis []peer.ID
	for _, st := range n.train.params.Genesis.Stakes {
		id, err := peer.Decode(st.Peer)
		switch {
		case id == n.host.ID():
			wait = n.train.loop.startWait // as long as the loop waits for the others
		case err == nil:
			genesis = append(genesis, id)
		}
	}
	for {
		all := func(asked []peer.ID) bool {
			return !slices.ContainsFunc(genesis, func(p peer.ID) bool { return !slices.Contains(asked, p) })
		}
		enough := func(asked, none []peer.ID) bool { return all(asked) || noneMajority(j.trust, none) }
		h, past := j.wantRounds(ctx, enough, wait)
		if !past {
			n.log.Info("no peer reports a closed round: starting at genesis", "peers_asked", len(j.peers), "every_genesis_peer", all(j.peers))
			return nil
		}
		got, err := j.run(ctx, j.checkpointOf(h))
		if err == nil && (got.ckpt != nil || len(got.rounds) > 0) {
			return n.adopt(got, j, began)
		}
		if ctx.Err() != nil {
			return nil
		}
		if (err == nil || errors.Is(err, errNoMajority)) && time.Since(began) > wait {
			// Heads of a majority, but no history a majority signed to join: peers on
			// lineages of their own (a minority that started early, one that started at
			// genesis after it), or a staker serving a head of its own. Waiting cannot
			// change that; a majority starting at genesis can.
			n.log.Warn("joining: no record the genesis stake's majority signed leads to the peers' head: starting at genesis", "head", h, "err", err)
			return nil
		}
		n.log.Warn("joining the run failed: trying again", "head", h, "err", err)
		j.rep.snaps = nil
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(joinRetry):
		}
	}
}

// newJoiner is a joiner of this node, keeping the last repair_depth rounds replayed.
func (n *Node) newJoiner() *joiner {
	j := &joiner{n: n, self: n.host.ID(), fetch: newFetchClient(n.host, n.network, wireOf(n.opts.Spec)),
		rep: newReplayer(n.train.params, n.opts.Spec, n.host.ID().String())}
	j.rep.keep = repairDepth(n.opts.Spec)
	if n.ledger != nil && n.ledger.st != nil {
		j.own = storedRounds{st: n.ledger.st}
	}
	if g, err := n.train.params.GenesisState(); err == nil { // the spec's genesis was checked at start
		j.stakers = map[peer.ID]bool{}
		for _, st := range n.train.params.Genesis.Stakes {
			if id, err := peer.Decode(st.Peer); err == nil && g.Power(st.Peer) > 0 {
				j.stakers[id] = true
			}
		}
	}
	return j
}

// adopt puts what a join found in force: in the store (the checkpoint and its ledger, then
// each round replayed, with its shards), then a new core at its state, seeded with the
// last rounds replayed and with fresh local state, whose local work starts at the round
// its peers work on.
func (n *Node) adopt(got *joined, j *joiner, began time.Time) error {
	if err := n.storeJoined(got, false); err != nil {
		return fmt.Errorf("joining: %w", err)
	}
	empty, _ := (&localState{}).marshal()
	if err := n.ledger.st.PutLocal(got.state.Round, empty); err != nil {
		return fmt.Errorf("joining: %w", err)
	}
	var ck uint64
	if got.ckpt != nil {
		ck = got.ckpt.Round
	}
	rp := resumePoint{state: got.state, ledger: got.ledger, first: got.state.Round + uint64(n.train.params.round.Delay), snaps: j.rep.snaps}
	if err := n.train.reset(rp, n.log); err != nil {
		return fmt.Errorf("joining: %w", err)
	}
	js := &JoinStatus{Round: got.state.Round, Checkpoint: ck, Replayed: len(got.rounds), Bytes: j.bytes.Load(), Seconds: time.Since(began).Seconds()}
	n.joinStatus.Store(js)
	n.log.Info(fmt.Sprintf("joined at round %d from checkpoint %d, replayed %d rounds, fetched %d bytes in %.1f seconds", js.Round, ck, js.Replayed, js.Bytes, js.Seconds),
		"round", js.Round, "checkpoint", ck, "replayed", js.Replayed, "bytes", js.Bytes, "seconds", js.Seconds, "first_local_round", rp.first)
	return nil
}

// storeJoined writes what a join found: the checkpoint and its ledger as the store's
// start, then each round replayed with its shards (Store.StartAt on a store at genesis),
// or, with jump, all of it in place of the store's rounds in one transaction
// (Store.JumpTo on a store behind the peers or off their lineage; without a checkpoint
// the lineage starts at genesis); then the ledger pointer is swapped. Each round is kept
// with its record signed by the node as a committed record (never a vote), so that it
// answers peers asking what it committed, and an audit checks it, from the start.
func (n *Node) storeJoined(got *joined, jump bool) error {
	st := n.ledger.st
	for i := range got.rounds { // what it now holds, signed as committed (not votes), as a repair does
		signed, err := n.signedOf(&core.Commit{Record: got.rounds[i].Record}, n.train.key)
		if err != nil {
			return err
		}
		got.rounds[i].Signed = signed
	}
	var m *checkpoint.Manifest
	var chunks [][]byte
	if got.ckpt != nil {
		m, chunks = checkpoint.Split(got.ckpt, 0)
	}
	if jump {
		start, err := n.lineageStart(got)
		if err == nil {
			err = st.JumpTo(m, chunks, start, got.rounds...)
		}
		if err != nil {
			return err
		}
	} else {
		if m != nil {
			if err := st.StartAt(m, chunks, got.ckpt.Ledger); err != nil {
				return err
			}
		}
		for _, r := range got.rounds {
			if err := st.CommitRound(r); err != nil {
				return err
			}
		}
	}
	switch {
	case m != nil:
		n.train.loop.ckpt.last.Store(&CheckpointStatus{Round: m.Round, Root: hexRoot(m.Root), ID: hexRoot(m.ID()), Bytes: m.Size})
		n.announceCheckpoints()
	case jump: // a jump drops every checkpoint kept; none was synced
		n.train.loop.ckpt.last.Store(nil)
	}
	n.ledger.state.Store(got.ledger)
	return nil
}

// lineageStart is the ledger the rounds got replayed start from: its checkpoint's, or
// the genesis ledger.
func (n *Node) lineageStart(got *joined) (*incentives.State, error) {
	if got.ckpt != nil {
		return got.ckpt.Ledger, nil
	}
	return n.train.params.GenesisState()
}

// storedRounds serves the node's committed rounds from its store (fetchCommitted,
// fetchStoredShard).
type storedRounds struct {
	st         *store.Store
	maxPayload int
}

var _ roundServer = storedRounds{}

func (s storedRounds) committed(r uint64) []byte {
	if r == headRound {
		led, err := s.st.State()
		if err != nil || led.Round == 0 {
			return nil
		}
		r = led.Round - 1
	}
	b, err := s.st.Signed(r)
	if err != nil {
		return nil
	}
	return b
}

func (s storedRounds) shard(r uint64, peer string, cid []byte) []byte {
	shards, err := s.st.Shards(r)
	if err != nil {
		return nil
	}
	for _, sh := range shards {
		if sh.Peer != peer {
			continue
		}
		v, err := verify.UnmarshalShard(sh.Data, s.maxPayload)
		if err == nil && bytes.Equal(v.Header.PayloadCID, cid) {
			return sh.Data
		}
	}
	return nil
}
