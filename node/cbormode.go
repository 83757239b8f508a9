package node

import "github.com/fxamacker/cbor/v2"

// detEncMode is the deterministic (core) CBOR encoding of what this package writes and
// signs or compares byte for byte.
func detEncMode() cbor.EncMode {
	m, err := cbor.CoreDetEncOptions().EncMode()
	if err != nil {
		panic(err) // static options; cannot fail
	}
	return m
}

// strictDecMode decodes peer or disk input: no duplicate map key, indefinite length, tag or
// unknown field, at most nested levels deep, arrays elements long and 16 map pairs. Sizes
// are checked before decoding.
func strictDecMode(nested, arrays int) cbor.DecMode {
	m, err := cbor.DecOptions{
		DupMapKey:         cbor.DupMapKeyEnforcedAPF,
		IndefLength:       cbor.IndefLengthForbidden,
		TagsMd:            cbor.TagsForbidden,
		MaxNestedLevels:   nested,
		MaxArrayElements:  arrays,
		MaxMapPairs:       16,
		ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
	}.DecMode()
	if err != nil {
		panic(err) // static options; cannot fail
	}
	return m
}
