package verify

import "time"

func verifyTDX(evidence []byte, p *TDXPolicy, now time.Time) (*Verdict, error) {
	return nil, errorf(ClassUnsupportedKind, nil, "tdx verification is not built yet")
}
