package node

// BadFrom reports, for an adversary kind whose contributions are refused by rule rather
// than bounded by the aggregation, the first round from which every contribution it sends
// is bad: nan, forged-attestation and replay from round 0 (a replaying node never sends a
// contribution of the current round), equivocate from the round it equivocates in. For
// the statistical kinds and stale, free-ride and silent it returns false: what they send
// is well formed and may be aggregated.
func BadFrom(kind string) (round uint64, ok bool) {
	switch kind {
	case AdvNaN, AdvForged, AdvReplay:
		return 0, true
	case AdvEquivocate:
		return equivocateAt, true
	}
	return 0, false
}
