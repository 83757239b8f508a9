// Package aggregate combines the decoded pseudo-gradients of one round into one update, robustly
// and bit-reproducibly: the same inputs in any order give the same bytes.
//
// Inputs are sorted by ID first; every sum then runs in that fixed order (or, for the
// coordinate-wise statistics, in the order of the sorted values with ties broken by ID), and
// every product is rounded before it is added (float64(a*b) + c; halving too, since x/2
// compiles to x*0.5), so no platform fuses a multiply-add; scripts/checkfma.sh checks the
// compiled code. Nothing iterates over a map.
//
// Methods (weights are the contributors' Input.Weight, all > 0; W is their sum):
//
//   - mean: Σ wᵢxᵢ / W.
//   - trimmed_mean: per coordinate, drop the k = ⌊Trim·n⌋ smallest and k largest values, then
//     the weighted mean of the rest (Yin et al., 2018).
//   - median: per coordinate, the weighted median: the first sorted value at which the
//     cumulative weight exceeds W/2, or the midpoint of it and the next value when the
//     cumulative weight equals W/2 exactly (with equal weights whose sums are exact, such as
//     integers, the ordinary median; with eight weights of 0.1 the rounded sums never equal
//     W/2, and the median of 0 to 7 is 3, not 3.5).
//   - centered_clip: start from the coordinate-wise median v and repeat Iters times
//     v ← v + Σ (wᵢ/W)·clip(xᵢ − v) with clip(d) = d·min(1, τ/‖d‖) (Karimireddy et al.,
//     2021). Tau = 0 sets τ to the weighted median of the distances ‖xᵢ − median‖.
//   - norm_clip: scale every input down to at most the weighted median of the input norms,
//     then take the weighted mean.
//   - filtered_mean: the weighted mean of the inputs within FilterRadius·r of the
//     coordinate-wise median m, r being the weighted median of the distances ‖xᵢ − m‖: an
//     input far from the others (sign-flipped, scaled, noise, a large step against the
//     others) is left out whole rather than clipped or trimmed per coordinate, so it
//     biases nothing, and with no such input the result is the mean. The inputs within r
//     carry at least half of the weight, so the mean is never empty; inputs with less than
//     half of the weight cannot move m or r beyond the others' spread.
//
// Dropped inputs (AggregateStreamTo): an input is dropped when the rule leaves it out
// whole, so that it has no part in the result. Only filtered_mean does that (the inputs
// beyond its radius). trimmed_mean trims values coordinate by coordinate, never an input
// whole; median picks a value per coordinate; centered_clip and norm_clip scale an input's
// part down, never to nothing (unless the median distance or norm is zero, which means
// more than half of the weight sent the same vector). Those rules drop nothing. A dropped
// input is still an input of the rule: it counts in the median and the radius the others
// are judged by.
package aggregate
