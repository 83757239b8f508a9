package compress

import (
	"bytes"
	"errors"
	"testing"
)

// stateInputs is a few rounds of pseudo-gradients over a low-rank and a dense tensor.
func stateInputs(rounds int) [][]Tensor {
	rng := newRand(3)
	out := make([][]Tensor, rounds)
	for i := range out {
		out[i] = []Tensor{randTensor(rng, "w", 1, 24, 16), randTensor(rng, "b", 1, 16)}
	}
	return out
}

// TestEncoderStateRestoredEncodesTheSameBytes: an Encoder given another's state with
// SetState encodes the following rounds to the same bytes as the one that went on, with
// the adaptive rank and with a byte budget (ranks that grow draw new columns of Q from the
// saved generator).
func TestEncoderStateRestoredEncodesTheSameBytes(t *testing.T) {
	for name, cfg := range map[string]Config{
		"adaptive": {MinLowRank: 64, RankMin: 1, RankMax: 8, EnergyTarget: 0.99},
		"budget":   {MinLowRank: 64, RankMin: 1, RankMax: 8, ByteBudget: 600, FeedbackDecay: 0.9},
	} {
		t.Run(name, func(t *testing.T) {
			in := stateInputs(6)
			a := mustEncoder(t, cfg)
			for _, ts := range in[:3] {
				mustEncode(t, a, ts)
			}
			b := mustEncoder(t, cfg)
			if err := b.SetState(a.State()); err != nil {
				t.Fatal(err)
			}
			for r, ts := range in[3:] {
				ma, mb := mustBytes(t, mustEncode(t, a, ts)), mustBytes(t, mustEncode(t, b, ts))
				if !bytes.Equal(ma, mb) {
					t.Fatalf("round %d after the restore: %d and %d bytes differ", r+3, len(ma), len(mb))
				}
			}
		})
	}
}

// TestEncoderSetStateRefusesWhatItCannotHaveMade: states that no Encoder of this
// configuration makes are refused with ErrState and leave the Encoder as it was.
func TestEncoderSetStateRefusesWhatItCannotHaveMade(t *testing.T) {
	cfg := Config{MinLowRank: 64, RankMin: 1, RankMax: 8}
	a := mustEncoder(t, cfg)
	mustEncode(t, a, stateInputs(1)[0])
	good := a.State()
	for name, bad := range map[string]func(st *EncoderState){
		"repeated name":     func(st *EncoderState) { st.Tensors[1].Name = st.Tensors[0].Name },
		"residual size":     func(st *EncoderState) { st.Tensors[0].Residual = st.Tensors[0].Residual[1:] },
		"shape":             func(st *EncoderState) { st.Tensors[1].Shape = []int{0} },
		"rank over bound":   func(st *EncoderState) { st.Tensors[0].Rank = 9 },
		"Q size":            func(st *EncoderState) { st.Tensors[0].Q = st.Tensors[0].Q[:3] },
		"dense as low-rank": func(st *EncoderState) { st.Tensors[1].LowRank = true },
		"low-rank as dense": func(st *EncoderState) { st.Tensors[0].LowRank = false },
		"generator":         func(st *EncoderState) { st.Tensors[0].Rand = []byte("junk") },
		"not finite":        func(st *EncoderState) { st.Tensors[1].Residual[0] = 1 / zero() },
		"too many gains":    func(st *EncoderState) { st.Tensors[0].Gains = make([]float64, st.Tensors[0].LastRank+1) },
	} {
		st := a.State()
		bad(&st)
		b := mustEncoder(t, cfg)
		if err := b.SetState(st); !errors.Is(err, ErrState) {
			t.Errorf("%s: %v, want ErrState", name, err)
		}
		if len(b.State().Tensors) != 0 {
			t.Errorf("%s: a refused state changed the encoder", name)
		}
	}
	if err := mustEncoder(t, cfg).SetState(good); err != nil {
		t.Fatalf("the encoder's own state: %v", err)
	}
}

func zero() float64 { return 0 }
