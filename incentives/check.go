package incentives

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lowband/lowband/verify"
)

// ProvableClasses are the verification failures that count as invalid-attestation evidence.
// They are the failures of a genuine report (hardware chain valid) that the network's policy
// refuses: the TEE itself vouches for what the peer runs. Failures anyone could fabricate
// (malformed, bad_signature, untrusted_root, binding_mismatch, unsupported_kind,
// sim_not_allowed) or that depend on the verifier's time and collateral (stale,
// collateral_invalid) never count. tcb_too_low counts for SEV-SNP only, where the TCB is in
// the signed report itself; a TDX quote's TCB status comes from collateral files and the
// clock, which can differ between nodes, so it is not provable (see provable).
var ProvableClasses = []verify.Class{
	verify.ClassMeasurementNotAllowed, verify.ClassDebugEnabled, verify.ClassTCBTooLow,
}

// Checker re-checks evidence from the signed data alone. Every field must be the same on
// every node of a network: the verdict must not depend on who checks, or when. Check is
// safe for concurrent use.
type Checker struct {
	// Network and Run: evidence about another network or run is refused. They are the
	// names bundles and shards carry (the network ID and the run).
	Network, Run string
	// Policy is the network's attestation policy.
	Policy *verify.Policy
	// EpochTime gives the instant at which a bundle of an epoch must have valid
	// certificates. It must be a pure function of the epoch (for example the network's
	// genesis time plus the epoch's length in rounds times the round length), never the
	// clock. When it is nil, no evidence that needs an attestation checked proves anything
	// (ErrNoEpochTime): a zero time would make the libraries read the clock.
	EpochTime func(epoch uint64) time.Time
	// ContentCheck is the deterministic content check of a shard payload (decodes, shapes,
	// finite, norm bound). It returns nil for a valid payload.
	ContentCheck func(payload []byte) error
}

// ErrNoEpochTime is wrapped (with ErrBadEvidence) when evidence needs an attestation
// checked and the Checker has no EpochTime.
var ErrNoEpochTime = fmt.Errorf("%w: the checker has no epoch time base, so no attestation can be checked", ErrBadEvidence)

// Check verifies that e proves an offence and returns it. Any error wraps ErrBadEvidence
// (or ErrMalformed) and means: nobody is penalised.
func (c *Checker) Check(e *Evidence) (Offence, error) {
	if err := e.checkShape(); err != nil {
		return Offence{}, err
	}
	if c.EpochTime == nil {
		return Offence{}, ErrNoEpochTime // every kind rests on a verified bundle
	}
	b, err := verify.UnmarshalBundle(e.Bundle)
	if err != nil {
		return Offence{}, fmt.Errorf("%w: bundle: %v", ErrBadEvidence, err)
	}
	if err := c.checkHeaders(b, e.Headers); err != nil {
		return Offence{}, err
	}
	h := &e.Headers[0].Header
	off := Offence{Kind: e.Kind, Peer: h.Peer, Round: h.Round, Index: h.Index}
	switch e.Kind {
	case KindEquivocation:
		err = c.checkEquivocation(b, e.Headers)
	case KindInvalidAttestation:
		off.Index = 0
		err = c.checkAttestation(b)
	case KindInvalidContent:
		err = c.checkContent(b, h, e.Payload)
	}
	if err != nil {
		return Offence{}, err
	}
	return off, nil
}

// checkHeaders: every header is for this network and run, names this bundle, is by the
// bundle's peer and is signed by the bundle's ephemeral key.
func (c *Checker) checkHeaders(b *verify.Bundle, hs []SignedHeader) error {
	bh := b.Hash()
	if b.Network != c.Network || b.Run != c.Run {
		return fmt.Errorf("%w: bundle is for %s/%s, not %s/%s", ErrBadEvidence, b.Network, b.Run, c.Network, c.Run)
	}
	for i := range hs {
		h := &hs[i].Header
		switch {
		case h.Network != c.Network || h.Run != c.Run:
			return fmt.Errorf("%w: shard is for %s/%s, not %s/%s", ErrBadEvidence, h.Network, h.Run, c.Network, c.Run)
		case !bytes.Equal(h.BundleHash, bh[:]):
			return fmt.Errorf("%w: shard names another bundle", ErrBadEvidence)
		case h.Peer != b.PeerID:
			return fmt.Errorf("%w: shard peer %s is not the bundle's peer %s", ErrBadEvidence, h.Peer, b.PeerID)
		}
		if err := verify.CheckHeaderSignature(h, hs[i].Sig, b.EphemeralKey); err != nil {
			return fmt.Errorf("%w: shard signature: %v", ErrBadEvidence, err)
		}
	}
	return nil
}

// checkEquivocation: the two headers (already distinct and sorted) share peer, round and
// index, and the key that signed both is attested for the peer.
func (c *Checker) checkEquivocation(b *verify.Bundle, hs []SignedHeader) error {
	x, y := &hs[0].Header, &hs[1].Header
	if x.Peer != y.Peer || x.Round != y.Round || x.Index != y.Index {
		return fmt.Errorf("%w: headers are for different shards", ErrBadEvidence)
	}
	return c.attested(b)
}

// attested requires the bundle to verify under the network's policy: only then is its key
// the peer's.
func (c *Checker) attested(b *verify.Bundle) error {
	if err := c.verify(b, c.Policy); err != nil {
		return fmt.Errorf("%w: the signing key is not attested: %v", ErrBadEvidence, err)
	}
	return nil
}

// checkAttestation: the bundle is genuine and bound to the peer (it verifies under a policy
// that ignores measurements, debug and TCB), yet the network's policy refuses it with a
// provable class. Without the first half anyone holding any genuine report could frame any
// peer by wrapping the report in a bundle naming the peer.
func (c *Checker) checkAttestation(b *verify.Bundle) error {
	err := c.verify(b, c.Policy)
	if err == nil {
		return fmt.Errorf("%w: the bundle verifies", ErrBadEvidence)
	}
	if cl := verify.ClassOf(err); !provable(b.Kind, cl) {
		return fmt.Errorf("%w: bundle failure %q is not provable for %s evidence: %v", ErrBadEvidence, cl, b.Kind, err)
	}
	if gerr := c.verify(b, relaxed(c.Policy)); gerr != nil {
		return fmt.Errorf("%w: bundle fails with %q but is not a genuine report bound to %s: %v", ErrBadEvidence, verify.ClassOf(err), b.PeerID, gerr)
	}
	return nil
}

// provable says whether a failure of class cl of evidence of the given kind is the same for
// every verifier.
func provable(kind verify.Kind, cl verify.Class) bool {
	if cl == verify.ClassTCBTooLow && kind != verify.KindSEVSNP {
		return false
	}
	return slices.Contains(ProvableClasses, cl)
}

// verify runs verify.Verify deterministically: the bundle's own epoch is the current one
// (staleness is about when evidence arrives, which no one else can check) and the time is
// EpochTime of that epoch.
func (c *Checker) verify(b *verify.Bundle, p *verify.Policy) error {
	if p == nil {
		return fmt.Errorf("no attestation policy configured")
	}
	if c.EpochTime == nil {
		return ErrNoEpochTime
	}
	now := c.EpochTime(b.Epoch)
	seed := verify.EpochSeed(b.Network, b.Run, b.Epoch)
	_, err := verify.Verify(b, p, seed[:], b.Epoch, now)
	return err
}

// relaxed is p without the rules whose failures are provable: measurement allow-lists,
// the debug ban and the minimum TCB. Roots, kinds, VMPL and collateral stay: a bundle that
// passes it is a genuine report that binds its peer and key.
func relaxed(p *verify.Policy) *verify.Policy {
	r := *p
	r.SimMeasurements = nil
	r.SNP.Measurements, r.SNP.AllowDebug, r.SNP.MinTCB = nil, true, verify.SNPTCB{}
	r.TDX.MRTDs, r.TDX.RTMRs, r.TDX.AllowDebug, r.TDX.MinTeeTCBSVN = nil, [4][][]byte{}, true, nil
	return &r
}

func (c *Checker) checkContent(b *verify.Bundle, h *verify.ShardHeader, payload []byte) error {
	if !bytes.Equal(verify.PayloadCID(payload), h.PayloadCID) {
		return fmt.Errorf("%w: payload is not the signed one", ErrBadEvidence)
	}
	if err := c.attested(b); err != nil {
		return err
	}
	if c.ContentCheck == nil {
		return fmt.Errorf("%w: no content check configured", ErrBadEvidence)
	}
	if err := c.ContentCheck(payload); err == nil {
		return fmt.Errorf("%w: the payload passes the content checks", ErrBadEvidence)
	}
	return nil
}

// IsBadEvidence reports whether err means the evidence proves nothing.
func IsBadEvidence(err error) bool {
	return errors.Is(err, ErrBadEvidence) || errors.Is(err, ErrMalformed)
}

// EvidenceChecker checks evidence. *Checker is one; CheckCache wraps one with a memo.
// Implementations must be deterministic and safe for concurrent use.
type EvidenceChecker interface {
	Check(e *Evidence) (Offence, error)
}

var (
	_ EvidenceChecker = (*Checker)(nil)
	_ EvidenceChecker = (*CheckCache)(nil)
)

// CheckCache remembers the verdicts of an EvidenceChecker by evidence ID, so that evidence
// checked when it arrived is not checked again when a record including it is built or
// applied. Verdicts are deterministic, so a cached verdict is the verdict. It holds at
// most Max entries and forgets all of them when full. Safe for concurrent use.
type CheckCache struct {
	Inner EvidenceChecker
	Max   int

	mu sync.Mutex
	m  map[ID]verdict
}

type verdict struct {
	off Offence
	err error
}

// NewCheckCache wraps c with a cache of at most max verdicts.
func NewCheckCache(c EvidenceChecker, max int) *CheckCache {
	return &CheckCache{Inner: c, Max: max}
}

// Check returns the cached verdict for e, or checks it and remembers the verdict.
func (c *CheckCache) Check(e *Evidence) (Offence, error) {
	id := e.ID()
	c.mu.Lock()
	v, ok := c.m[id]
	c.mu.Unlock()
	if ok {
		return v.off, v.err
	}
	off, err := c.Inner.Check(e)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= c.Max {
		c.m = make(map[ID]verdict)
	}
	c.m[id] = verdict{off, err}
	return off, err
}
