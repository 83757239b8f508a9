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
	// EpochRounds is the network's attestation epoch length in rounds. When set, a header
	// counts only in a round whose epoch accepts its bundle (the policy's window around the
	// bundle's epoch), so a leaked ephemeral key cannot speak for its peer in other epochs.
	// Zero: not checked.
	EpochRounds uint64
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
	if e.Kind == KindRecordEquivocation {
		return c.checkRecordEquivocation(e) // signed by identities: no attestation
	}
	if c.EpochTime == nil {
		return Offence{}, ErrNoEpochTime // every kind rests on a verified bundle
	}
	b, err := c.bundle(e.Bundle)
	if err != nil {
		return Offence{}, err
	}
	if e.Kind == KindEquivocation {
		return c.checkEquivocation(b, e)
	}
	if err := c.checkHeaders(b, e.Headers); err != nil {
		return Offence{}, err
	}
	h := &e.Headers[0].Header
	off := Offence{Kind: e.Kind, Peer: h.Peer, Round: h.Round, Index: h.Index}
	switch e.Kind {
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

// bundle decodes a bundle and requires it to be for this network and run.
func (c *Checker) bundle(enc []byte) (*verify.Bundle, error) {
	b, err := verify.UnmarshalBundle(enc)
	if err != nil {
		return nil, fmt.Errorf("%w: bundle: %v", ErrBadEvidence, err)
	}
	if b.Network != c.Network || b.Run != c.Run {
		return nil, fmt.Errorf("%w: bundle is for %s/%s, not %s/%s", ErrBadEvidence, b.Network, b.Run, c.Network, c.Run)
	}
	return b, nil
}

// checkHeaders: every header names this bundle and is signed under it (see checkSigned).
func (c *Checker) checkHeaders(b *verify.Bundle, hs []SignedHeader) error {
	bh := b.Hash()
	for i := range hs {
		if !bytes.Equal(hs[i].Header.BundleHash, bh[:]) {
			return fmt.Errorf("%w: shard names another bundle", ErrBadEvidence)
		}
		if err := c.checkSigned(b, &hs[i]); err != nil {
			return err
		}
	}
	return nil
}

// checkSigned: the header is for this network and run, by the bundle's peer, and signed by
// the bundle's ephemeral key.
func (c *Checker) checkSigned(b *verify.Bundle, s *SignedHeader) error {
	h := &s.Header
	switch {
	case h.Network != c.Network || h.Run != c.Run:
		return fmt.Errorf("%w: shard is for %s/%s, not %s/%s", ErrBadEvidence, h.Network, h.Run, c.Network, c.Run)
	case h.Peer != b.PeerID:
		return fmt.Errorf("%w: shard peer %s is not the bundle's peer %s", ErrBadEvidence, h.Peer, b.PeerID)
	}
	if err := c.covers(b, h.Round); err != nil {
		return err
	}
	if err := verify.CheckHeaderSignature(h, s.Sig, b.EphemeralKey); err != nil {
		return fmt.Errorf("%w: shard signature: %v", ErrBadEvidence, err)
	}
	return nil
}

// covers: with EpochRounds set, the bundle is within the policy's window at the epoch of
// round (at most one epoch ahead, at most MaxAgeEpochs behind).
func (c *Checker) covers(b *verify.Bundle, round uint64) error {
	if c.EpochRounds == 0 || c.Policy == nil {
		return nil
	}
	e := round / c.EpochRounds
	if b.Epoch > e && b.Epoch-e > 1 || e > b.Epoch && e-b.Epoch > c.Policy.MaxAgeEpochs {
		return fmt.Errorf("%w: a bundle of epoch %d does not cover round %d (epoch %d)", ErrBadEvidence, b.Epoch, round, e)
	}
	return nil
}

// checkEquivocation: two different headers (checkShape) for one peer, round and index, each
// signed by the key of a bundle of that peer (b0, or Bundle2 for the second header when
// present) that verifies under the network's policy. Each bundle carries the peer's
// identity signature, so the peer itself attested both keys, whichever bundle hash each
// header names.
func (c *Checker) checkEquivocation(b0 *verify.Bundle, e *Evidence) (Offence, error) {
	b1 := b0
	if e.Bundle2 != nil {
		var err error
		if b1, err = c.bundle(e.Bundle2); err != nil {
			return Offence{}, err
		}
		if b1.PeerID != b0.PeerID {
			return Offence{}, fmt.Errorf("%w: the bundles are of different peers", ErrBadEvidence)
		}
	}
	for i, b := range []*verify.Bundle{b0, b1} {
		if err := c.checkSigned(b, &e.Headers[i]); err != nil {
			return Offence{}, err
		}
	}
	x, y := &e.Headers[0].Header, &e.Headers[1].Header
	if x.Peer != y.Peer || x.Round != y.Round || x.Index != y.Index {
		return Offence{}, fmt.Errorf("%w: headers are for different shards", ErrBadEvidence)
	}
	if err := c.attested(b0); err != nil {
		return Offence{}, err
	}
	if b1 != b0 {
		if err := c.attested(b1); err != nil {
			return Offence{}, err
		}
	}
	return Offence{Kind: KindEquivocation, Peer: x.Peer, Round: x.Round, Index: x.Index}, nil
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
