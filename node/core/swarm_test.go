package core_test

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/aggregate"
	"github.com/lowband/lowband/training/compress"
	"github.com/lowband/lowband/training/round"
	"github.com/lowband/lowband/verify"
)

const (
	testNetwork = "testnet"
	testRun     = "run-1"
	maxPayload  = 1 << 20
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// theta0 is a small model: a matrix that the codec compresses at low rank and a dense bias.
func theta0() []training.Tensor {
	rng := rand.New(rand.NewPCG(1, 1))
	w := make([]float64, 24*16)
	b := make([]float64, 16)
	for i := range w {
		w[i] = rng.NormFloat64()
	}
	return []training.Tensor{{Name: "w", Shape: []int{24, 16}, Data: w}, {Name: "b", Shape: []int{16}, Data: b}}
}

func roundConfig(self string) round.Config {
	return round.Config{
		Self: self, Weight: 1, Delay: 1, OuterLR: 0.35, Momentum: 0.5,
		Compress:  compress.Config{RankMin: 2, RankMax: 4, MinLowRank: 16, MaxShardBytes: compress.MinShardBytes, Seed: 3},
		Aggregate: aggregate.Config{Method: aggregate.Mean},
	}
}

var deadlineConfig = core.DeadlineConfig{Quorum: 0.67, Min: 5 * time.Second, Max: 60 * time.Second, K: 3}

// local is a node's local work for a round: a small step from start, the same for the same
// node, round and start.
func local(name string, start *round.Start) []training.Tensor {
	seed := sha256.Sum256([]byte(name))
	rng := rand.New(rand.NewPCG(binary.LittleEndian.Uint64(seed[:]), start.Round))
	out := make([]training.Tensor, len(start.Params))
	for i, t := range start.Params {
		d := slices.Clone(t.Data)
		for j := range d {
			d[j] -= 0.01 * (d[j] + rng.NormFloat64())
		}
		out[i] = training.Tensor{Name: t.Name, Shape: slices.Clone(t.Shape), Data: d}
	}
	return out
}

// node is one Core of a swarm and what its Readys asked for.
type node struct {
	name, id string
	core     *core.Core
	train    *round.Start
	sums     []*core.Summary
	fetch    []core.Want
	silent   bool // publishes nothing
	repairs  []*core.Repair
	commits  []*core.Commit // as closed (repairs apart)
	refused  int            // records Record refused
	cidFetch [][]core.Want  // each Fetch by CID
	late     []uint64       // rounds whose local work the core dropped (Ready.Late)
	// tamper, if set, replaces each message the node publishes with what it returns.
	tamper func(core.Message) []core.Message
	// work, if set, is the node's local work instead of local.
	work func(start *round.Start) []training.Tensor
}

// swarm drives Cores against each other through an in-memory exchange of their Publish
// messages, on fake time. Messages wait in a pool and are delivered in the order its rng
// picks; shards are decoded (verify.UnmarshalShard) and treated as verified.
type swarm struct {
	t       *testing.T
	fx      *incentivestest.Fixture
	nodes   []*node
	bundles map[string][]byte // peer ID -> bundle
	pool    []delivery
	rng     *rand.Rand
	now     time.Time
	records map[string][][]byte // peer ID -> its records, encoded
	shards  map[string][][]byte // peer ID -> its own signed shards, encoded
	// drop, if set, loses the deliveries it returns true for (gossip and fetches alike).
	drop func(d delivery) bool
	// manual: wants by CID are not answered as they come; the test calls serve.
	manual bool
	// edit, if set, changes every core's round configuration (see newSwarmEdit).
	edit func(*round.Config)
	// model makes θ_0 (theta0 unless newSwarmModel says otherwise).
	model func() []training.Tensor
}

type delivery struct {
	from, to *node
	msg      core.Message
	fetch    bool // an answer to a fetch by CID, not gossip
}

// stakes maps names to genesis stakes; a name with stake 0 is in the swarm but unstaked.
func newSwarm(t *testing.T, seed uint64, params incentives.Params, names []string, stakes []uint64) *swarm {
	t.Helper()
	return newSwarmWith(t, seed, params, names, stakes, nil)
}

// newSwarmWith is newSwarm with extra genesis stakes of peers that run no core.
func newSwarmWith(t *testing.T, seed uint64, params incentives.Params, names []string, stakes []uint64, extra []incentives.Stake) *swarm {
	t.Helper()
	return newSwarmEdit(t, seed, params, names, stakes, extra, nil)
}

// newSwarmEdit is newSwarmWith whose cores' round configuration edit changes.
func newSwarmEdit(t *testing.T, seed uint64, params incentives.Params, names []string, stakes []uint64, extra []incentives.Stake, edit func(*round.Config)) *swarm {
	t.Helper()
	return newSwarmModel(t, seed, params, names, stakes, extra, edit, theta0)
}

// newSwarmModel is newSwarmEdit on the model model makes instead of theta0.
func newSwarmModel(t *testing.T, seed uint64, params incentives.Params, names []string, stakes []uint64, extra []incentives.Stake, edit func(*round.Config), model func() []training.Tensor) *swarm {
	t.Helper()
	s := &swarm{t: t, fx: incentivestest.New(testNetwork, testRun), bundles: map[string][]byte{},
		rng: rand.New(rand.NewPCG(seed, 7)), now: t0,
		records: map[string][][]byte{}, shards: map[string][][]byte{}, edit: edit, model: model}
	g := incentives.Genesis{Stakes: slices.Clone(extra)}
	for i, n := range names {
		if stakes[i] > 0 {
			g.Stakes = append(g.Stakes, incentives.Stake{Peer: incentivestest.PeerID(n), Amount: stakes[i]})
		}
	}
	for _, n := range names {
		ledger, err := incentives.NewState(params, g)
		if err != nil {
			t.Fatal(err)
		}
		s.nodes = append(s.nodes, &node{name: n, id: incentivestest.PeerID(n), core: s.newCore(n, round.State{Params: model()}, ledger)})
	}
	return s
}

// newCore is the Core of the node name at st and ledger, with its signer set.
func (s *swarm) newCore(name string, st round.State, ledger *incentives.State) *core.Core {
	s.t.Helper()
	id := incentivestest.PeerID(name)
	rc := roundConfig(id)
	if s.edit != nil {
		s.edit(&rc)
	}
	c, err := core.New(core.Config{
		Self: id, Network: testNetwork, Run: testRun, Round: rc, Deadline: deadlineConfig,
		Checker: s.fx.Checker(), Limits: compress.DefaultLimits, Identity: incentivestest.Identity(name),
	}, st, ledger)
	if err != nil {
		s.t.Fatal(err)
	}
	s.setSigner(c, name)
	return c
}

func (s *swarm) setSigner(c *core.Core, name string) {
	bundle := s.fx.Bundle(name, "")
	b, err := verify.UnmarshalBundle(bundle)
	if err != nil {
		s.t.Fatal(err)
	}
	s.bundles[b.PeerID] = bundle
	c.SetSigner(core.Signer{Key: s.fx.Key(name), Bundle: bundle, BundleHash: b.Hash()})
}

func (s *swarm) node(name string) *node {
	for _, n := range s.nodes {
		if n.name == name {
			return n
		}
	}
	s.t.Fatalf("no node %s", name)
	return nil
}

// handle does what a Ready asks: messages go to the pool for every other node.
func (s *swarm) handle(n *node, rd core.Ready, err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatalf("%s: %v", n.name, err)
	}
	if (rd.Commit == nil) != (rd.Summary == nil) {
		s.t.Fatalf("%s: a commit without a summary or the other way round", n.name)
	}
	for _, m := range rd.Publish { // the node persists a commit before it publishes
		if sh, err := verify.UnmarshalShard(m.Data, 1<<20); err == nil && m.Kind == core.KindShards && rd.Commit != nil && sh.Header.Round == rd.Commit.Record.Round {
			s.t.Fatalf("%s: round %d committed in the Ready that publishes its own shards of it", n.name, sh.Header.Round)
		}
	}
	for _, m := range rd.Publish {
		if m.Kind == core.KindRecords {
			s.records[n.id] = append(s.records[n.id], m.Data)
		}
		if m.Kind == core.KindShards {
			s.shards[n.id] = append(s.shards[n.id], m.Data)
		}
		out := []core.Message{m}
		if n.tamper != nil {
			out = n.tamper(m)
		}
		for _, m := range out {
			for _, to := range s.nodes {
				if to != n && !n.silent {
					s.send(delivery{from: n, to: to, msg: m})
				}
			}
		}
	}
	n.fetch = append(n.fetch, rd.Fetch...)
	if slices.ContainsFunc(rd.Fetch, func(w core.Want) bool { return w.CID != nil }) {
		n.cidFetch = append(n.cidFetch, rd.Fetch)
	}
	if !s.manual {
		s.serve(n, rd.Fetch)
	}
	if rd.Repair != nil {
		n.repairs = append(n.repairs, rd.Repair)
	}
	if rd.Train != nil {
		n.train = rd.Train
	}
	n.late = append(n.late, rd.Late...)
	if rd.Summary != nil {
		n.sums = append(n.sums, rd.Summary)
	}
	if rd.Commit != nil {
		n.commits = append(n.commits, rd.Commit)
	}
}

// send puts d in the pool unless drop loses it.
func (s *swarm) send(d delivery) {
	if s.drop == nil || !s.drop(d) {
		s.pool = append(s.pool, d)
	}
}

// serve answers the wants by CID: the shard with that payload CID, from the node that
// published it, if any did.
func (s *swarm) serve(n *node, wants []core.Want) {
	for _, w := range wants {
		if w.CID == nil {
			continue
		}
		for _, from := range s.nodes {
			for _, data := range s.shards[from.id] {
				sh, err := verify.UnmarshalShard(data, maxPayload)
				if err != nil {
					s.t.Fatal(err)
				}
				if string(sh.Header.PayloadCID) == string(w.CID) {
					s.send(delivery{from: from, to: n, msg: core.Message{Kind: core.KindShards, Data: data}, fetch: true})
				}
			}
		}
	}
}

// deliver hands one message to its node as the validators would: decoded and checked.
func (s *swarm) deliver(d delivery) {
	s.t.Helper()
	c := d.to.core
	switch d.msg.Kind {
	case core.KindShards:
		sh, err := verify.UnmarshalShard(d.msg.Data, maxPayload)
		if err != nil {
			s.t.Fatal(err)
		}
		rd, err := c.Shard(s.now, sh, s.bundles[sh.Header.Peer])
		s.handle(d.to, rd, err)
	case core.KindEvidence:
		e, err := incentives.DecodeEvidence(d.msg.Data)
		if err != nil {
			s.t.Fatal(err)
		}
		if _, err := s.fx.Checker().Check(e); err != nil {
			s.t.Fatalf("evidence published by a core does not check: %v", err)
		}
		rd, err := c.Evidence(e)
		s.handle(d.to, rd, err)
	case core.KindRecords:
		sr, rec, err := incentives.DecodeSignedRecord(d.msg.Data)
		if err != nil {
			s.t.Fatal(err)
		}
		if err := sr.Verify(); err != nil {
			s.t.Fatal(err)
		}
		rd, err := c.Record(s.now, sr, rec)
		if errors.Is(err, core.ErrRecordWindow) || errors.Is(err, core.ErrRecordNoPower) || errors.Is(err, core.ErrRecordDuplicate) {
			d.to.refused++ // the loop logs and counts these
			err = nil
		}
		s.handle(d.to, rd, err)
	}
}

// flush delivers every message in the pool, in random order, with what they cause.
func (s *swarm) flush() {
	for len(s.pool) > 0 {
		i := s.rng.IntN(len(s.pool))
		d := s.pool[i]
		s.pool = slices.Delete(s.pool, i, i+1)
		s.deliver(d)
	}
}

func (s *swarm) start() {
	for _, n := range s.nodes {
		rd, err := n.core.Start(s.now)
		s.handle(n, rd, err)
	}
}

// step: every node that has local work to do finishes it, interleaved at random with the
// delivery of what is in the pool; then everything is delivered and the clock advances by
// one second, ticking every node.
func (s *swarm) step(who func(*node) bool) {
	todo := slices.Clone(s.nodes)
	for len(todo) > 0 {
		if len(s.pool) > 0 && s.rng.IntN(2) == 0 {
			i := s.rng.IntN(len(s.pool))
			d := s.pool[i]
			s.pool = slices.Delete(s.pool, i, i+1)
			s.deliver(d)
			continue
		}
		i := s.rng.IntN(len(todo))
		n := todo[i]
		todo = slices.Delete(todo, i, i+1)
		if n.train != nil && who(n) {
			st := n.train
			n.train = nil
			work := local(n.name, st)
			if n.work != nil {
				work = n.work(st)
			}
			rd, err := n.core.LocalDone(s.now, st.Round, work)
			s.handle(n, rd, err)
		}
	}
	s.flush()
	s.tick(s.now.Add(time.Second))
}

func (s *swarm) tick(now time.Time) {
	s.now = now
	for _, n := range s.nodes {
		rd, err := n.core.Tick(s.now)
		s.handle(n, rd, err)
	}
	s.flush()
}

func everyone(*node) bool { return true }

// sameRoots fails unless the nodes named closed the same rounds with the same roots and
// inclusion lists, and returns the last summary.
func sameRoots(t *testing.T, nodes []*node) *core.Summary {
	t.Helper()
	ref := nodes[0]
	for _, n := range nodes[1:] {
		if len(n.sums) != len(ref.sums) {
			t.Fatalf("%s closed %d rounds, %s %d", n.name, len(n.sums), ref.name, len(ref.sums))
		}
		for i, s := range n.sums {
			r := ref.sums[i]
			if s.Round != r.Round || s.ModelRoot != r.ModelRoot || s.StateRoot != r.StateRoot || s.LedgerRoot != r.LedgerRoot {
				t.Fatalf("round %d: %s and %s disagree: model %x/%x state %x/%x ledger %x/%x", s.Round, n.name, ref.name,
					s.ModelRoot[:4], r.ModelRoot[:4], s.StateRoot[:4], r.StateRoot[:4], s.LedgerRoot[:4], r.LedgerRoot[:4])
			}
			if !slices.Equal(s.Included, r.Included) {
				t.Fatalf("round %d: %s included %v, %s %v", s.Round, n.name, s.Included, ref.name, r.Included)
			}
		}
	}
	if len(ref.sums) == 0 {
		t.Fatal("no round closed")
	}
	return ref.sums[len(ref.sums)-1]
}

func ledgerParams() incentives.Params {
	p := incentives.Params{MinStake: 100, Reward: 10, JailRounds: 3, UnstakedWeightPPM: 500_000, EvidenceWindow: 4}
	p.Penalties[incentives.KindEquivocation] = 50
	p.Penalties[incentives.KindInvalidContent] = 20
	p.Penalties[incentives.KindInvalidAttestation] = 20
	return p
}

func ids(nodes ...*node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.id)
	}
	slices.Sort(out)
	return out
}

// contribution joins the shards peer published for round r into its contribution.
func (s *swarm) contribution(peer string, r uint64) round.Contribution {
	s.t.Helper()
	var parts []*compress.Message
	for _, data := range s.shards[peer] {
		sh, err := verify.UnmarshalShard(data, maxPayload)
		if err != nil {
			s.t.Fatal(err)
		}
		if sh.Header.Round != r {
			continue
		}
		m, err := compress.DecodeShard(sh.Payload, compress.DefaultLimits)
		if err != nil {
			s.t.Fatal(err)
		}
		parts = append(parts, m)
	}
	msg, err := compress.Join(parts)
	if err != nil {
		s.t.Fatal(err)
	}
	return round.Contribution{Round: r, Peer: peer, Weight: 1, Msg: msg}
}

// reference replays node n's own local work for rounds 0 and 1 on a plain round.Machine,
// gives it exactly the peers' contributions of round 0 listed (with their weights, n's
// own too) and closes round 0: the root every honest core must reach if it aggregated those and nothing else.
func (s *swarm) reference(n *node, weights map[string]float64) [32]byte {
	s.t.Helper()
	cfg := roundConfig(n.id)
	cfg.Weight = weights[n.id]
	m, err := round.New(cfg, round.State{Params: s.model()})
	if err != nil {
		s.t.Fatal(err)
	}
	st, err := m.Start()
	if err != nil {
		s.t.Fatal(err)
	}
	rd, err := m.LocalDone(0, local(n.name, &st))
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := m.LocalDone(1, local(n.name, rd.Start)); err != nil {
		s.t.Fatal(err)
	}
	for peer, w := range weights {
		if peer == n.id {
			continue
		}
		c := s.contribution(peer, 0)
		c.Weight = w
		if err := m.Receive(c); err != nil {
			s.t.Fatal(err)
		}
	}
	if _, err := m.Close(0); err != nil {
		s.t.Fatal(err)
	}
	return m.State().Root()
}
