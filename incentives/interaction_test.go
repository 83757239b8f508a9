package incentives_test

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/verify"
)

// TestScenarios runs the golden scenario files under testdata/.
func TestScenarios(t *testing.T) {
	for _, path := range scriptFiles(t) {
		t.Run(path, func(t *testing.T) {
			d := &driver{t: t, fx: incentivestest.New("testnet", "run-1")}
			runScript(t, path, d.run)
		})
	}
}

type driver struct {
	t  *testing.T
	fx *incentivestest.Fixture
	st *incentives.State
}

func (d *driver) run(b *block) string {
	switch b.cmd {
	case "genesis":
		return d.genesis(b)
	case "round":
		return d.round(b)
	case "apply":
		return d.apply(b)
	case "table":
		return table(d.st)
	case "power":
		return d.power(b)
	}
	d.t.Fatalf("line %d: unknown command %q", b.line, b.cmd)
	return ""
}

// Scenario files name peers A, B, ...; the ledger knows them by incentivestest.PeerID. The
// driver translates names in and peer IDs out, so the files stay readable.
var peerNames = map[string]string{}

func peerID(name string) string {
	id := incentivestest.PeerID(name)
	peerNames[id] = name
	return id
}

func peerName(id string) string {
	if n, ok := peerNames[id]; ok {
		return n
	}
	return id
}

// withNames replaces every known peer ID in s by its name.
func withNames(s string) string {
	for id, n := range peerNames {
		s = strings.ReplaceAll(s, id, n)
	}
	return s
}

func table(st *incentives.State) string {
	var sb strings.Builder
	t := st.Table()
	for i := range t.Peers {
		t.Peers[i].Peer = peerName(t.Peers[i].Peer)
	}
	slices.SortFunc(t.Peers, func(a, b incentives.PeerRow) int { return strings.Compare(a.Peer, b.Peer) })
	if err := t.WriteText(&sb); err != nil {
		return "error: " + err.Error()
	}
	return sb.String()
}

func (d *driver) num(b *block, key string, def uint64) uint64 {
	v, ok := b.args[key]
	if !ok {
		return def
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		d.t.Fatalf("line %d: %s=%q: %v", b.line, key, v, err)
	}
	return n
}

func (d *driver) genesis(b *block) string {
	p := incentives.Params{
		MinStake: d.num(b, "min_stake", 0), Reward: d.num(b, "reward", 0),
		JailRounds: d.num(b, "jail_rounds", 0), UnstakedWeightPPM: d.num(b, "unstaked_weight_ppm", 0),
		EvidenceWindow: d.num(b, "evidence_window", 0),
	}
	p.Penalties[incentives.KindEquivocation] = d.num(b, "equivocation", 0)
	p.Penalties[incentives.KindInvalidAttestation] = d.num(b, "invalid_attestation", 0)
	p.Penalties[incentives.KindInvalidContent] = d.num(b, "invalid_content", 0)
	var g incentives.Genesis
	for _, l := range b.body {
		var s incentives.Stake
		if _, err := fmt.Sscan(l, &s.Peer, &s.Amount); err != nil {
			d.t.Fatalf("line %d: genesis line %q: %v", b.line, l, err)
		}
		s.Peer = peerID(s.Peer)
		g.Stakes = append(g.Stakes, s)
	}
	st, err := incentives.NewState(p, g)
	if err != nil {
		return "error: " + err.Error()
	}
	d.st = st
	return table(st)
}

// items parses a round's body into contributions and evidence.
func (d *driver) items(b *block) ([]incentives.Contribution, []incentives.Evidence) {
	var cs []incentives.Contribution
	var es []incentives.Evidence
	for _, l := range b.body {
		f := strings.Fields(l)
		if len(f) < 2 {
			d.t.Fatalf("line %d: body line %q wants: what peer [k=v...]", b.line, l)
		}
		_, args := splitArgs(f[2:])
		peerID(f[1])
		item := &block{line: b.line, args: args}
		if f[0] == "contrib" {
			cs = append(cs, d.fx.Contribution(f[1], d.st.Round, int(d.num(item, "shards", 1))))
			continue
		}
		es = append(es, *d.evidence(f[0], f[1], item))
	}
	return cs, es
}

func (d *driver) evidence(kind, peer string, b *block) *incentives.Evidence {
	round := d.num(b, "round", d.st.Round)
	index := uint32(d.num(b, "index", 0))
	fx := d.fx
	if b.args["forge"] == "net" {
		fx = incentivestest.New("othernet", d.fx.Run)
	}
	var e *incentives.Evidence
	switch kind {
	case "equivocation":
		e = fx.Equivocation(peer, round, index, b.args["variant"])
		if b.args["forge"] == "same" {
			e.Headers[1] = e.Headers[0]
		}
		if b.args["forge"] == "unattested" {
			e = unattested(fx, peer, round, index)
		}
	case "attestation":
		class := verify.Class(b.args["class"])
		if class == "" {
			class = verify.ClassMeasurementNotAllowed
		}
		e = fx.InvalidAttestation(peer, round, class)
	case "content":
		e = fx.InvalidContent(peer, round, index)
		if b.args["forge"] == "good" {
			bundle := fx.Bundle(peer, "")
			e = incentives.NewInvalidContent(bundle, fx.Shard(peer, bundle, round, index, []byte("fine payload")))
		}
	default:
		d.t.Fatalf("line %d: unknown evidence kind %q", b.line, kind)
	}
	if b.args["forge"] == "sig" {
		e.Headers[0].Sig[0] ^= 1
	}
	return e
}

// unattested is equivocation signed under a bundle the verifier refuses.
func unattested(fx *incentivestest.Fixture, peer string, round uint64, index uint32) *incentives.Evidence {
	b := fx.Bundle(peer, verify.ClassUntrustedRoot)
	x := fx.Shard(peer, b, round, index, []byte("one"))
	y := fx.Shard(peer, b, round, index, []byte("two"))
	return incentives.NewEquivocation(b, incentivestest.Signed(x), incentivestest.Signed(y))
}

// round closes the next round with Build, checks that Apply of the encoded record on the
// previous state gives the same state, and prints what was left out and what happened.
func (d *driver) round(b *block) string {
	cs, es := d.items(b)
	chk := d.fx.Checker()
	cl, err := d.st.Build(cs, es, []byte(b.args["model"]), chk)
	rec, next, events, rejected := cl.Record, cl.State, cl.Events, cl.Rejected
	if err != nil {
		return "error: " + err.Error()
	}
	dec, err := incentives.DecodeRecord(rec.Marshal())
	if err != nil {
		d.t.Fatalf("line %d: decoding the built record: %v", b.line, err)
	}
	again, _, err := d.st.Apply(dec, chk)
	if err != nil || !again.Equal(next) {
		d.t.Fatalf("line %d: Apply of the built record disagrees with Build: %v", b.line, err)
	}
	var sb strings.Builder
	for _, r := range rejected {
		fmt.Fprintf(&sb, "rejected %s: %s\n", r.ID.String()[:8], errText(r.Err))
	}
	for _, e := range events {
		sb.WriteString(eventText(e) + "\n")
	}
	d.st = next
	fmt.Fprintf(&sb, "head %x", next.Head[:8])
	return sb.String()
}

// apply hands a record with the given items straight to Apply, bypassing Build's filter:
// a record with bad evidence must be refused whole.
func (d *driver) apply(b *block) string {
	cs, es := d.items(b)
	rec := &incentives.Record{Round: d.st.Round, PrevRoot: d.st.Head, Contributions: cs, Evidence: es, NewRoot: make([]byte, 32)}
	next, _, err := d.st.Apply(rec, d.fx.Checker())
	if err == nil {
		d.st = next
		return "applied"
	}
	return "error: " + errText(err)
}

func (d *driver) power(b *block) string {
	var sb strings.Builder
	for _, p := range b.pos {
		id := peerID(p)
		fmt.Fprintf(&sb, "%s power %d jailed %v score %g\n", p, d.st.Power(id), d.st.Jailed(id), d.st.AppScore(id))
	}
	fmt.Fprintf(&sb, "total %d", d.st.TotalPower())
	return sb.String()
}

// errText is the error's message; every refusal must carry one of the package's sentinels.
func errText(err error) string {
	for _, s := range []error{incentives.ErrOutsideWindow, incentives.ErrBadEvidence, incentives.ErrMalformed, incentives.ErrRootMismatch, incentives.ErrRoundOrder, incentives.ErrAlreadyPenalised} {
		if errors.Is(err, s) {
			return withNames(err.Error())
		}
	}
	return "(no sentinel) " + withNames(err.Error())
}

func eventText(e incentives.Event) string {
	s := fmt.Sprintf("%s %s", e.Kind, peerName(e.Peer))
	if e.Amount > 0 || e.Kind == incentives.EventReward || e.Kind == incentives.EventPenalty {
		s += fmt.Sprintf(" %d", e.Amount)
	}
	if e.Offence != nil {
		s += fmt.Sprintf(" (%s round %d index %d)", e.Offence.Kind, e.Offence.Round, e.Offence.Index)
	}
	return s
}
