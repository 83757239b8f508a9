package bench

import (
	"testing"
	"time"
)

// RunVerify runs every measurement (briefly) and each one's operation succeeds.
func TestRunVerify(t *testing.T) {
	res, err := RunVerify(VerifyOptions{Duration: 5 * time.Millisecond, PayloadBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]Rate{
		"sim": res.SimBundles, "snp": res.SNPBundles, "tdx": res.TDXBundles,
		"cached": res.CachedLookups, "sig": res.ShardSigChecks, "full": res.ShardFullChecks,
		"batched": res.ShardSigBatch,
		"ed25519": res.Ed25519Verifies,
	} {
		if r.PerS <= 0 || r.PerCPUS < 0 {
			t.Errorf("%s rate %+v", name, r)
		}
	}
	if res.ShardSigBatchSize != 64 {
		t.Errorf("batch size %d", res.ShardSigBatchSize)
	}
	if _, err := RunVerify(VerifyOptions{}); err == nil {
		t.Error("zero duration accepted")
	}
}
