package compress

// lowRankShape reports whether a tensor of this shape is sent as low-rank factors, given
// Config.MinLowRank (validated).
func lowRankShape(shape []int, minLowRank int) bool {
	return len(shape) == 2 && shape[0]*shape[1] >= minLowRank && min(shape[0], shape[1]) >= 2
}

// Due reports which tensors of a model, given by their shapes in the model's order, a
// message of round r carries (nil: all of them). It is the rotation of Config.DenseEvery
// and Config.Fragments, a pure function of the round, the tensors' order and shapes and
// the configuration, so that the sender and every receiver agree on it:
//
//   - with Fragments k above 1 and n low-rank tensors, the j-th low-rank tensor (counting
//     only the low-rank ones, from 0, in the model's order) is due in the rounds r with
//     r mod m = j mod m, m = min(k, n), so every round carries at least one of them;
//     otherwise every low-rank tensor is due in every round;
//   - with DenseEvery k above 1, the j-th dense tensor (counting only the dense ones, from
//     0, in the model's order) is due in the rounds r with (r + j) mod k = 0;
//   - a model with no low-rank tensor, or both settings at most 1, has every tensor due in
//     every round (so that no message is ever empty).
//
// A tensor that is not due counts as zero in the receiver's decoded contribution
// (Message.DecodeDue), in every node's aggregate of that round.
func (c Config) Due(r uint64, shapes [][]int) []bool {
	if c.DenseEvery <= 1 && c.Fragments <= 1 {
		return nil
	}
	minLR := c.MinLowRank
	if minLR == 0 {
		minLR = DefaultMinLowRank
	}
	n := uint64(0)
	for _, s := range shapes {
		if lowRankShape(s, minLR) {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	m := min(uint64(max(c.Fragments, 1)), n)
	if m == 1 && c.DenseEvery <= 1 {
		return nil
	}
	due := make([]bool, len(shapes))
	j, l := uint64(0), uint64(0)
	for i, s := range shapes {
		if lowRankShape(s, minLR) {
			due[i] = r%m == l%m
			l++
			continue
		}
		due[i] = c.DenseEvery <= 1 || (r+j)%uint64(c.DenseEvery) == 0
		j++
	}
	return due
}
