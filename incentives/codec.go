package incentives

import (
	"bytes"
	"fmt"

	"github.com/fxamacker/cbor/v2"
)

// Size limits, checked before anything is decoded.
const (
	// MaxRecordSize caps one encoded commit record, evidence included. A record is gossiped
	// as one message: this leaves room for the gossip layer's framing under its 1 MiB cap.
	MaxRecordSize = 1<<20 - 32<<10
	// MaxEvidenceSize caps one encoded evidence item: a bundle (at most 64 KiB), two signed
	// headers and at most one shard payload (at most 512 KiB).
	MaxEvidenceSize = 580 << 10
	// MaxContributionsSize caps the encoded inclusion list of one record, so that a record
	// with the most contributions still has room for one maximal evidence item.
	MaxContributionsSize = MaxRecordSize - MaxEvidenceSize - recordOverhead
	// MaxStateSize caps one encoded ledger state.
	MaxStateSize = 64 << 20
	// MaxContributions caps the inclusion list of one record.
	MaxContributions = 4096
	// MaxShardsPerContribution caps the shard CIDs of one contribution.
	MaxShardsPerContribution = 256
	// MaxEvidencePerRecord caps the evidence items of one record.
	MaxEvidencePerRecord = 64
	// MaxRootSize caps a model root given by the training side.
	MaxRootSize = 64
	maxCIDSize  = 64
	// recordOverhead bounds the encoding of a record's fields other than its two lists.
	recordOverhead = 1024
)

var (
	encMode = func() cbor.EncMode {
		opts := cbor.CoreDetEncOptions()
		opts.NilContainers = cbor.NilContainerAsEmpty // nil and empty encode alike
		m, err := opts.EncMode()
		if err != nil {
			panic(err) // static options; cannot fail
		}
		return m
	}()
	// decMode decodes peer input (records, evidence): no list is longer than the largest
	// list a valid record holds, so a forged length cannot make the decoder allocate much.
	decMode = newDecMode(MaxContributions)
	// stateDecMode decodes the node's own stored state, whose lists are longer.
	stateDecMode = newDecMode(max(MaxAccounts, maxSeen))
)

func newDecMode(maxArray int) cbor.DecMode {
	m, err := cbor.DecOptions{
		DupMapKey:         cbor.DupMapKeyEnforcedAPF,
		IndefLength:       cbor.IndefLengthForbidden,
		TagsMd:            cbor.TagsForbidden,
		MaxNestedLevels:   12,
		MaxArrayElements:  maxArray,
		MaxMapPairs:       64,
		ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
	}.DecMode()
	if err != nil {
		panic(err) // static options; cannot fail
	}
	return m
}

// marshal encodes v canonically. The package's types hold only plain values (strings,
// integers, byte slices, slices of structs), for which encoding cannot fail.
func marshal(v any) []byte {
	b, err := encMode.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("incentives: encoding %T: %v", v, err))
	}
	return b
}

// decodeCanonical decodes data into v, refusing input over limit (before decoding) and
// input that is not the canonical encoding of what it decodes to, so that one value has
// exactly one encoding and one hash.
func decodeCanonical(dm cbor.DecMode, what string, data []byte, limit int, v any) error {
	if len(data) > limit {
		return fmt.Errorf("%w: %s is %d bytes, limit %d", ErrMalformed, what, len(data), limit)
	}
	if err := dm.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%w: decoding %s: %v", ErrMalformed, what, err)
	}
	again, err := encMode.Marshal(v)
	if err != nil || !bytes.Equal(again, data) {
		return fmt.Errorf("%w: %s is not in canonical encoding", ErrMalformed, what)
	}
	return nil
}
