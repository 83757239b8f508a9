package node

import (
	"bytes"
	"errors"
	"testing"

	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/verify"
)

func TestFetchRequests(t *testing.T) {
	alice := incentivestest.PeerID("alice")
	for _, r := range []fetchRequest{
		bundleRequest([32]byte{1, 2, 3}),
		cidRequest(verify.PayloadCID([]byte("payload"))),
		slotRequest(slot{round: 1 << 40, peer: alice, index: 7}),
	} {
		got, err := parseFetchRequest(r.marshal())
		if err != nil || string(got.marshal()) != string(r.marshal()) {
			t.Fatalf("kind %d: %+v, %v", r.kind, got, err)
		}
	}
	long := slotRequest(slot{peer: string(bytes.Repeat([]byte("x"), verify.MaxIDLen+1))}).marshal()
	for name, req := range map[string][]byte{
		"empty":             nil,
		"unknown kind":      {9, 1, 2},
		"short hash":        append([]byte{fetchBundle}, make([]byte, 31)...),
		"long hash":         append([]byte{fetchBundle}, make([]byte, 33)...),
		"empty CID":         {fetchShardCID},
		"slot without peer": slotRequest(slot{round: 1}).marshal(),
		"slot of a bad ID":  slotRequest(slot{peer: "not a peer"}).marshal(),
		"over the cap":      long,
	} {
		if _, err := parseFetchRequest(req); !errors.Is(err, ErrBadFetchRequest) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// FuzzFetchRequest: no request makes the decoder panic, and what it accepts encodes back
// to the same bytes (one request has one form).
func FuzzFetchRequest(f *testing.F) {
	f.Add(bundleRequest([32]byte{1}).marshal())
	f.Add(cidRequest(verify.PayloadCID(nil)).marshal())
	f.Add(slotRequest(slot{round: 3, peer: incentivestest.PeerID("alice"), index: 2}).marshal())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, req []byte) {
		r, err := parseFetchRequest(req)
		if err != nil {
			if !errors.Is(err, ErrBadFetchRequest) {
				t.Fatalf("error %v is not ErrBadFetchRequest", err)
			}
			return
		}
		if !bytes.Equal(r.marshal(), req) {
			t.Fatalf("%x decodes and encodes to %x", req, r.marshal())
		}
	})
}
