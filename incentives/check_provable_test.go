package incentives

import (
	"testing"

	"github.com/lowband/lowband/verify"
)

// TestProvableClasses: only failures every verifier sees alike may slash. A TDX quote's TCB
// status depends on each node's collateral and clock, so it never does; SEV-SNP's TCB is in
// the signed report and does.
func TestProvableClasses(t *testing.T) {
	cases := []struct {
		kind verify.Kind
		cl   verify.Class
		want bool
	}{
		{verify.KindSEVSNP, verify.ClassTCBTooLow, true},
		{verify.KindTDX, verify.ClassTCBTooLow, false},
		{verify.KindTDX, verify.ClassMeasurementNotAllowed, true},
		{verify.KindSEVSNP, verify.ClassDebugEnabled, true},
		{verify.KindTDX, verify.ClassCollateralInvalid, false},
		{verify.KindSim, verify.ClassBadSignature, false},
		{verify.KindSEVSNP, verify.ClassStale, false},
		{verify.KindSim, verify.ClassBindingMismatch, false},
	}
	for _, c := range cases {
		if got := provable(c.kind, c.cl); got != c.want {
			t.Errorf("provable(%s, %s) = %v, want %v", c.kind, c.cl, got, c.want)
		}
	}
}
