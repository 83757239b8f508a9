package round

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
)

// domainModel tags the model root, so that it never equals a hash made for another use.
const domainModel = "lowband/model/v1\x00"

// Root is the model root of the state: SHA-256 over a domain tag, the round, then for every
// tensor in order its name, shape and the IEEE-754 bits of its values, then the outer
// momentum. Every integer and every value's bits are written as 8 bytes little endian, and
// every list (name, shape, values, momentum) is prefixed with its length, so the root is the
// same on every architecture and two different states never share an encoding. A nil
// momentum (no outer step yet) is marked absent, so it differs from a momentum of zeros; an
// empty one counts as absent. Two nodes agree on the root exactly when they hold the same
// bytes of θ and momentum for the same round.
func (s State) Root() [32]byte {
	h := sha256.New()
	var buf [8]byte
	word := func(x uint64) {
		binary.LittleEndian.PutUint64(buf[:], x)
		h.Write(buf[:])
	}
	floats := func(xs []float64) {
		word(uint64(len(xs)))
		for _, v := range xs {
			word(math.Float64bits(v))
		}
	}
	h.Write([]byte(domainModel))
	word(s.Round)
	word(uint64(len(s.Params)))
	for _, t := range s.Params {
		word(uint64(len(t.Name)))
		h.Write([]byte(t.Name))
		word(uint64(len(t.Shape)))
		for _, d := range t.Shape {
			word(uint64(int64(d)))
		}
		floats(t.Data)
	}
	if len(s.Momentum) == 0 {
		word(0)
	} else {
		word(1)
		floats(s.Momentum)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}
