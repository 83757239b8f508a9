package compress

import (
	"math"
	"math/rand/v2"
	"testing"
)

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 7)) }

func randTensor(rng *rand.Rand, name string, scale float64, shape ...int) Tensor {
	t := Tensor{Name: name, Shape: shape, Data: make([]float64, numel(shape))}
	for i := range t.Data {
		t.Data[i] = scale * rng.NormFloat64()
	}
	return t
}

// rankK returns a rows×cols matrix of rank k (sum of k random outer products).
func rankK(rng *rand.Rand, name string, rows, cols, k int) Tensor {
	t := Tensor{Name: name, Shape: []int{rows, cols}, Data: make([]float64, rows*cols)}
	for c := 0; c < k; c++ {
		u := randTensor(rng, "", 1, rows).Data
		v := randTensor(rng, "", 1, cols).Data
		for i := range u {
			for j := range v {
				t.Data[i*cols+j] += u[i] * v[j]
			}
		}
	}
	return t
}

func mustEncoder(t testing.TB, cfg Config) *Encoder {
	t.Helper()
	e, err := NewEncoder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func mustEncode(t testing.TB, e *Encoder, ts []Tensor) *Message {
	t.Helper()
	m, err := e.Encode(ts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustBytes(t testing.TB, m *Message) []byte {
	t.Helper()
	b, err := m.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustDecode(t testing.TB, m *Message) []Tensor {
	t.Helper()
	ts, err := m.Decode()
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func norm(v []float64) float64 { return math.Sqrt(sumSquares(v)) }

// relErr returns ‖a−b‖/‖b‖.
func relErr(a, b []float64) float64 {
	d := make([]float64, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
	}
	return norm(d) / norm(b)
}

func clone(ts []Tensor) []Tensor {
	out := make([]Tensor, len(ts))
	for i, t := range ts {
		out[i] = Tensor{Name: t.Name, Shape: append([]int(nil), t.Shape...), Data: append([]float64(nil), t.Data...)}
	}
	return out
}
