package training

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestEvalInRowsIsOnePass: Eval, which runs a large batch evalRows samples at a time,
// gives the loss and accuracy of one forward pass over the whole batch.
func TestEvalInRowsIsOnePass(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	m, err := NewCharLM(CharLMSize{Vocab: 40, Context: 4, Embed: 6, Hidden: []int{24}}, rng)
	if err != nil {
		t.Fatal(err)
	}
	n := 209 // more than three times evalRows
	b := Batch{N: n, Tokens: make([]int, 4*n), Y: make([]int, n)}
	for i := range b.Tokens {
		b.Tokens[i] = rng.IntN(40)
	}
	for i := range b.Y {
		b.Y[i] = rng.IntN(40)
	}
	loss, acc, err := m.Eval(b)
	if err != nil {
		t.Fatal(err)
	}
	if c := cap(m.acts[1]); c >= n*24 {
		t.Errorf("Eval grew the activations to %d values, want those of %d samples", c, evalRows)
	}
	want, correct := softmaxXent(m.forward(b), b.Y, n, 40, nil)
	if math.Float64bits(loss) != math.Float64bits(want) || acc != float64(correct)/float64(n) {
		t.Errorf("Eval gave loss %v accuracy %v, one pass %v and %v", loss, acc, want, float64(correct)/float64(n))
	}
}
