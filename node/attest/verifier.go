package attest

import (
	"encoding/hex"
	"fmt"
	"log/slog"
	"time"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/verify"
)

// Verifier is the node's bundle checker: the network's policy, a verdict cache and the
// log. Safe for concurrent use.
type Verifier struct {
	policy *verify.Policy
	cache  *verify.Cache
	log    *slog.Logger
	now    func() time.Time
}

// NewVerifier returns a verifier for policy, caching up to cacheSize verdicts. log may be
// nil (nothing is logged).
func NewVerifier(policy *verify.Policy, cacheSize int, log *slog.Logger) *Verifier {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Verifier{policy: policy, cache: verify.NewCache(cacheSize), log: log, now: time.Now}
}

// Verify checks b at the current epoch, from the cache when it was verified before. Every
// bundle newly accepted on simulated evidence is logged at warning level as insecure.
func (v *Verifier) Verify(b *verify.Bundle, currentEpoch uint64) (*verify.Verdict, error) {
	return v.VerifyAt(b, currentEpoch, v.now())
}

// VerifyAt is Verify with certificates checked at the instant at instead of the clock's
// time. The node passes the network's nominal time of the bundle's epoch (the time base
// evidence is checked at), so that a bundle it accepts live is one whose evidence every
// node would accept too.
func (v *Verifier) VerifyAt(b *verify.Bundle, currentEpoch uint64, at time.Time) (*verify.Verdict, error) {
	seed := verify.EpochSeed(b.Network, b.Run, b.Epoch)
	verdict, hit, err := v.cache.VerifyCached(b, v.policy, seed[:], currentEpoch, at)
	if err != nil {
		return nil, err
	}
	if !hit {
		logAcceptance(v.log, verdict)
	}
	return verdict, nil
}

// Lookup returns the cached verdict of a bundle hash when the node's policy reached it and
// its epoch is still within the policy's window at currentEpoch.
func (v *Verifier) Lookup(hash [32]byte, currentEpoch uint64) (*verify.Verdict, bool) {
	verdict, err := v.cache.Lookup(hash, v.policy, currentEpoch)
	return verdict, err == nil && verdict != nil
}

func logAcceptance(log *slog.Logger, v *verify.Verdict) {
	attrs := []any{"peer", v.PeerID, "kind", string(v.Kind), "epoch", v.Epoch,
		"bundle", hex.EncodeToString(v.BundleHash[:8]), "measurement_checked", v.MeasurementChecked}
	if v.Insecure {
		log.Warn("INSECURE: accepted simulated TEE evidence; nothing protects this peer's key or code", attrs...)
		return
	}
	log.Info("attestation verified", attrs...)
}

// CheckStart is what a node checks before it starts: the network accepts its producer, and
// a node with the public (production) profile never runs on a network that accepts
// simulated evidence.
func CheckStart(cfg *configs.Config, spec *configs.Spec) error {
	if err := CheckProducerAllowed(cfg.Attest.Producer, spec.Attest); err != nil {
		return err
	}
	if cfg.Profile == configs.ProfilePublic && spec.Attest.AllowsSim() {
		return fmt.Errorf("network %s accepts simulated TEE evidence, which the %s profile refuses: use the local profile for test networks", spec.NetworkID(), cfg.Profile)
	}
	return nil
}
