package verify

import "time"

func verifySNP(evidence []byte, endorsements [][]byte, p *SNPPolicy, now time.Time) (*Verdict, error) {
	return nil, errorf(ClassUnsupportedKind, nil, "sev-snp verification is not built yet")
}
