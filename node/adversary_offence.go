package node

// BadIn reports whether a contribution that an adversary of kind sends for round r is bad
// by rule, refused rather than bounded by the aggregation: every one of nan,
// forged-attestation and replay (a replaying node never sends a contribution of the
// current round), and equivocate's of the round it equivocates in (its contributions of
// the other rounds are valid, and count until the record that penalises it jails it). The
// statistical kinds and stale, free-ride and silent send nothing bad by rule: what they
// send is well formed and may be aggregated.
func BadIn(kind string, r uint64) bool {
	switch kind {
	case AdvNaN, AdvForged, AdvReplay:
		return true
	case AdvEquivocate:
		return r == equivocateAt
	}
	return false
}

// EquivocatesIn is the round an equivocate adversary equivocates in.
func EquivocatesIn() uint64 { return equivocateAt }
