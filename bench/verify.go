package bench

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"runtime"
	"time"

	sevdata "github.com/google/go-sev-guest/verify/testdata"
	tdxdata "github.com/google/go-tdx-guest/testing/testdata"

	"github.com/libp2p/go-libp2p/core/crypto"
	"github.com/libp2p/go-libp2p/core/peer"
	"github.com/lowband/lowband/verify"
)

// VerifyOptions configures RunVerify.
type VerifyOptions struct {
	// Duration is how long each rate is measured.
	Duration time.Duration
	// PayloadBytes is the shard payload size for the full shard check (signature plus
	// payload content ID).
	PayloadBytes int
}

// DefaultVerifyOptions measures each rate for one second, with 256 KiB shard payloads.
func DefaultVerifyOptions() VerifyOptions {
	return VerifyOptions{Duration: time.Second, PayloadBytes: 256 << 10}
}

// Rate is one measured rate: operations per second of wall time, and per second of CPU
// time of the measuring thread. On a shared machine the second is the figure for "one
// core"; the first also counts the time other processes held the core.
type Rate struct {
	PerS    float64 `json:"per_s"`
	PerCPUS float64 `json:"per_cpu_s"`
}

// VerifyResult is what RunVerify measures, each on one goroutine locked to one thread.
type VerifyResult struct {
	// SimBundles is full uncached Verify calls on a sim bundle (decode excluded).
	SimBundles Rate `json:"sim_bundles"`
	// SNPBundles and TDXBundles are uncached evidence verifications of the libraries'
	// sample report and quote: the chain to the pinned root, the signature and the policy.
	// The samples are not bound to a lowband identity, so the binding check (one SHA-512
	// and a comparison) is not part of these two figures.
	SNPBundles Rate `json:"sev_snp_bundles"`
	TDXBundles Rate `json:"tdx_bundles"`
	// CachedLookups is Cache.VerifyCached hits: bundle hash plus look-up.
	CachedLookups Rate `json:"cached_lookups"`
	// ShardSigChecks is shard header signature checks (ed25519 over the domain tag and
	// canonical header, ZIP-215 rules) by the attested key, one at a time.
	ShardSigChecks Rate `json:"shard_sig_checks"`
	// ShardSigBatch is the same checks made by CheckHeaderSignatures in batches of
	// ShardSigBatchSize shards, each signed by its own key; the rate counts signatures, not
	// batches.
	ShardSigBatch     Rate `json:"shard_sig_checks_batched"`
	ShardSigBatchSize int  `json:"shard_sig_batch_size"`
	// ShardFullChecks is CheckShardSignature with the payload's content ID recomputed.
	ShardFullChecks Rate `json:"shard_full_checks"`
	PayloadBytes    int  `json:"payload_bytes"`
	// Ed25519Verifies is bare crypto/ed25519.Verify calls on a message of a shard header's
	// signed size: the standard library's rate, for comparison (shard checks use
	// curve25519-voi).
	Ed25519Verifies Rate `json:"ed25519_verifies"`
}

// Times inside the samples' certificate validity.
var (
	snpSampleTime = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	tdxSampleTime = time.Date(2023, 7, 1, 1, 0, 0, 0, time.UTC)
)

// RunVerify measures verification rates. It fails if any verification it times fails.
func RunVerify(o VerifyOptions) (VerifyResult, error) {
	res := VerifyResult{PayloadBytes: o.PayloadBytes, ShardSigBatchSize: shardBatch}
	if o.Duration <= 0 || o.PayloadBytes < 0 {
		return res, fmt.Errorf("need a positive duration and a non-negative payload size")
	}
	runtime.LockOSThread() // threadCPU measures this thread
	defer runtime.UnlockOSThread()
	steps := []struct {
		name string
		dst  *Rate
		run  func(VerifyOptions) (func() error, error)
	}{
		{"sim bundle", &res.SimBundles, simBundleOp},
		{"sev-snp evidence", &res.SNPBundles, snpOp},
		{"tdx evidence", &res.TDXBundles, tdxOp},
		{"cached look-up", &res.CachedLookups, cachedOp},
		{"shard signature", &res.ShardSigChecks, shardSigOp},
		{"batched shard signatures", &res.ShardSigBatch, shardBatchOp},
		{"full shard check", &res.ShardFullChecks, shardFullOp},
		{"bare ed25519", &res.Ed25519Verifies, ed25519Op},
	}
	for _, s := range steps {
		op, err := s.run(o)
		if err != nil {
			return res, fmt.Errorf("%s: %w", s.name, err)
		}
		if *s.dst, err = rate(op, o.Duration); err != nil {
			return res, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	res.ShardSigBatch.PerS *= shardBatch // batches to signatures
	res.ShardSigBatch.PerCPUS *= shardBatch
	return res, nil
}

// rate runs op repeatedly for about d of wall time and returns its rates.
func rate(op func() error, d time.Duration) (Rate, error) {
	if err := op(); err != nil { // warm up, and fail fast
		return Rate{}, err
	}
	n := 0
	start, cpu0 := time.Now(), threadCPU()
	for {
		for range 16 {
			if err := op(); err != nil {
				return Rate{}, err
			}
		}
		n += 16
		if el := time.Since(start); el >= d {
			r := Rate{PerS: float64(n) / el.Seconds()}
			if cpu := threadCPU() - cpu0; cpu > 0 {
				r.PerCPUS = float64(n) / cpu.Seconds()
			}
			return r, nil
		}
	}
}

func benchKey(b byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{b}, ed25519.SeedSize))
}

// benchPeer is the peer ID of the identity key made from benchKey(b).
func benchPeer(b byte) string {
	k, err := crypto.UnmarshalEd25519PrivateKey(benchKey(b))
	if err != nil {
		panic(err) // a 64-byte Ed25519 key always unmarshals
	}
	id, err := peer.IDFromPrivateKey(k)
	if err != nil {
		panic(err)
	}
	return id.String()
}

func simSetup() (*verify.Bundle, *verify.Policy, []byte, error) {
	root := benchKey(1)
	identity, err := crypto.UnmarshalEd25519PrivateKey(benchKey(3))
	if err != nil {
		return nil, nil, nil, err
	}
	b, err := verify.NewSimBundle(root, make([]byte, verify.MeasurementSize), "bench-00000000", "run",
		identity, 5, benchKey(2).Public().(ed25519.PublicKey))
	if err != nil {
		return nil, nil, nil, err
	}
	p := &verify.Policy{AllowSim: true, SimRoots: [][]byte{root.Public().(ed25519.PublicKey)}, MaxAgeEpochs: 1}
	seed := verify.EpochSeed(b.Network, b.Run, b.Epoch)
	return b, p, seed[:], nil
}

func simBundleOp(VerifyOptions) (func() error, error) {
	b, p, seed, err := simSetup()
	if err != nil {
		return nil, err
	}
	return func() error {
		_, err := verify.Verify(b, p, seed, 5, snpSampleTime)
		return err
	}, nil
}

func snpOp(VerifyOptions) (func() error, error) {
	p := verify.DefaultPolicy(verify.KindSEVSNP)
	p.SNP.AllowDebug = true // the sample's guest policy allows debugging
	certs := [][]byte{sevdata.VcekBytes}
	return func() error {
		_, err := verify.VerifyEvidence(verify.KindSEVSNP, sevdata.AttestationBytes, certs, p, snpSampleTime)
		return err
	}, nil
}

func tdxOp(VerifyOptions) (func() error, error) {
	p := verify.DefaultPolicy(verify.KindTDX)
	quote, err := verify.TrimTDXQuote(tdxdata.RawQuote)
	if err != nil {
		return nil, err
	}
	return func() error {
		_, err := verify.VerifyEvidence(verify.KindTDX, quote, nil, p, tdxSampleTime)
		return err
	}, nil
}

func cachedOp(VerifyOptions) (func() error, error) {
	b, p, seed, err := simSetup()
	if err != nil {
		return nil, err
	}
	c := verify.NewCache(1024)
	if _, _, err := c.VerifyCached(b, p, seed, 5, snpSampleTime); err != nil {
		return nil, err
	}
	return func() error {
		_, hit, err := c.VerifyCached(b, p, seed, 5, snpSampleTime)
		if err == nil && !hit {
			err = fmt.Errorf("cache miss")
		}
		return err
	}, nil
}

func benchShard(o VerifyOptions) (*verify.Shard, ed25519.PublicKey, error) {
	key := benchKey(3)
	payload := bytes.Repeat([]byte{0x42}, o.PayloadBytes)
	h := verify.ShardHeader{Network: "bench-00000000", Run: "run", Round: 1, Peer: benchPeer(4),
		Index: 0, Count: 1, BundleHash: make([]byte, 32)}
	s, err := verify.SignShard(key, h, payload)
	return s, key.Public().(ed25519.PublicKey), err
}

func shardSigOp(o VerifyOptions) (func() error, error) {
	s, pub, err := benchShard(o)
	if err != nil {
		return nil, err
	}
	return func() error { return verify.CheckHeaderSignature(&s.Header, s.Sig, pub) }, nil
}

// shardBatch is the batch size of the batched shard signature rate.
const shardBatch = 64

// shardBatchOp checks shardBatch header signatures, each by its own key, in one call.
func shardBatchOp(VerifyOptions) (func() error, error) {
	hs := make([]*verify.ShardHeader, shardBatch)
	sigs := make([][]byte, shardBatch)
	keys := make([]ed25519.PublicKey, shardBatch)
	for i := range shardBatch {
		key := benchKey(byte(10 + i))
		h := verify.ShardHeader{Network: "bench-00000000", Run: "run", Round: 1, Peer: benchPeer(byte(100 + i)),
			Index: 0, Count: 1, BundleHash: make([]byte, 32)}
		s, err := verify.SignShard(key, h, []byte{byte(i)})
		if err != nil {
			return nil, err
		}
		hs[i], sigs[i], keys[i] = &s.Header, s.Sig, key.Public().(ed25519.PublicKey)
	}
	return func() error {
		for i, err := range verify.CheckHeaderSignatures(hs, sigs, keys) {
			if err != nil {
				return fmt.Errorf("shard %d: %w", i, err)
			}
		}
		return nil
	}, nil
}

func shardFullOp(o VerifyOptions) (func() error, error) {
	s, pub, err := benchShard(o)
	if err != nil {
		return nil, err
	}
	return func() error { return verify.CheckShardSignature(s, pub) }, nil
}

func ed25519Op(o VerifyOptions) (func() error, error) {
	s, pub, err := benchShard(o)
	if err != nil {
		return nil, err
	}
	msg, err := s.Header.SigningBytes()
	if err != nil {
		return nil, err
	}
	return func() error {
		if !ed25519.Verify(pub, msg, s.Sig) {
			return fmt.Errorf("signature does not verify")
		}
		return nil
	}, nil
}
