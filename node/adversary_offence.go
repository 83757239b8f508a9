package node

// BadIn reports whether the contributions an adversary of kind sends are bad
// by rule, refused rather than bounded by the aggregation: every one of nan,
// forged-attestation and replay (a replaying node never sends a contribution of the
// current round). An equivocator's contributions are not: each of its two shards for a
// slot is valid, and a node that holds only one of them before it closes the round
// includes the contribution, so which one the round aggregates, if either, the list vote
// decides, alike on every honest node. What equivocating costs is the slash. (A rule by
// which evidence learned after a close took the contribution out again would let the
// equivocator, releasing that evidence as the round leaves some nodes' repair windows and
// not others', split them.) The statistical kinds and stale, free-ride, free-ride-copy
// and silent send nothing bad by rule either: what they send is well formed and may be
// aggregated (a copier's contribution is another peer's, under its own name).
func BadIn(kind string) bool {
	switch kind {
	case AdvNaN, AdvForged, AdvReplay:
		return true
	}
	return false
}

// EquivocatesIn is the round an equivocate adversary equivocates in.
func EquivocatesIn() uint64 { return equivocateAt }
