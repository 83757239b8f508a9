package incentivestest

import (
	"crypto/ed25519"
	"crypto/sha512"

	"github.com/oasisprotocol/curve25519-voi/curve"
	"github.com/oasisprotocol/curve25519-voi/curve/scalar"
)

// SignWithNonce is Ed25519 with a nonce chosen by the signer instead of derived from the
// message: a second valid signature of the same message by the same key, as only the
// key's holder can make (a signer re-signing what it published).
func SignWithNonce(key ed25519.PrivateKey, msg []byte, nonce byte) ([]byte, error) {
	h := sha512.Sum512(key.Seed())
	h[0] &= 248
	h[31] &= 127
	h[31] |= 64
	a, err := scalar.NewFromBytesModOrder(h[:32])
	if err != nil {
		return nil, err
	}
	rh := sha512.Sum512(append([]byte{nonce}, msg...))
	r, err := scalar.NewFromBytesModOrderWide(rh[:])
	if err != nil {
		return nil, err
	}
	var R curve.CompressedEdwardsY
	R.SetEdwardsPoint(curve.NewEdwardsPoint().MulBasepoint(curve.ED25519_BASEPOINT_TABLE, r))
	kh := sha512.New()
	kh.Write(R[:])
	kh.Write(key.Public().(ed25519.PublicKey))
	kh.Write(msg)
	k, err := scalar.NewFromBytesModOrderWide(kh.Sum(nil))
	if err != nil {
		return nil, err
	}
	s := scalar.New().Mul(k, a)
	s.Add(s, r)
	sig := append([]byte(nil), R[:]...)
	var sb [32]byte
	if err := s.ToBytes(sb[:]); err != nil {
		return nil, err
	}
	return append(sig, sb[:]...), nil
}
