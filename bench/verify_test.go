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
	for name, r := range map[string]float64{
		"sim": res.SimBundlesPerS, "snp": res.SNPBundlesPerS, "tdx": res.TDXBundlesPerS,
		"cached": res.CachedLookupsPerS, "sig": res.ShardSigChecksPerS, "full": res.ShardFullChecksPerS,
		"ed25519": res.Ed25519VerifiesPerS,
	} {
		if r <= 0 {
			t.Errorf("%s rate %v", name, r)
		}
	}
	if _, err := RunVerify(VerifyOptions{}); err == nil {
		t.Error("zero duration accepted")
	}
}
