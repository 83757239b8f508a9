package incentives

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/lowband/lowband/verify"
)

// RecordVersion is the commit record format this package reads and writes.
const RecordVersion = 1

// Contribution is one peer's included pseudo-gradient: its shards by CID (binary CIDs,
// sorted, distinct).
type Contribution struct {
	Peer   string   `cbor:"1,keyasint"`
	Shards [][]byte `cbor:"2,keyasint"`
	// Dropped: the round's aggregation rule left this contribution out whole (filtered_mean
	// found it beyond its radius). It is listed because it was an input of the rule (the
	// others were judged by a median it counts in), and earns nothing (EventFiltered).
	// Whoever closes the round again must find the same flags (node/replay.go checks them);
	// the ledger itself takes them as the record says. Absent from the encoding when false,
	// so records without a dropped contribution encode as before.
	Dropped bool `cbor:"3,keyasint,omitempty"`
}

// Record is the commit record of one closed round (design section 2, step 8). Records chain
// by root: PrevRoot is the NewRoot of the record before (or the genesis root).
//
// In canonical form contributions are sorted by peer (distinct), each one's shards sorted,
// and evidence sorted by ID (distinct). Canonicalize puts a record in that form; the decoder
// refuses any other.
type Record struct {
	Version       uint8          `cbor:"1,keyasint"`
	Round         uint64         `cbor:"2,keyasint"`
	PrevRoot      []byte         `cbor:"3,keyasint"`
	Contributions []Contribution `cbor:"4,keyasint"`
	Evidence      []Evidence     `cbor:"5,keyasint"`
	// ModelRoot is the training side's hash of the model and optimizer state after the
	// round; the ledger treats it as opaque bytes.
	ModelRoot []byte `cbor:"6,keyasint"`
	// NewRoot is StateRoot(Round, ModelRoot, ledger root after the round).
	NewRoot []byte `cbor:"7,keyasint"`
}

const domainRoot = "lowband/root/v1\x00"

// StateRoot combines a round, the model root and the ledger root into the state root R
// that nodes compare for agreement.
func StateRoot(round uint64, modelRoot []byte, ledgerRoot [32]byte) [32]byte {
	h := sha256.New()
	h.Write([]byte(domainRoot))
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], round)
	h.Write(n[:])
	binary.BigEndian.PutUint64(n[:], uint64(len(modelRoot)))
	h.Write(n[:])
	h.Write(modelRoot)
	h.Write(ledgerRoot[:])
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// Marshal returns the canonical encoding of the record as it is (call Canonicalize first
// for a record built from unsorted input).
func (r *Record) Marshal() []byte { return marshal(r) }

// Canonicalize sorts contributions by peer (merging a peer's entries, dropped if any of
// them is), sorts and dedupes each one's shard CIDs, and sorts evidence by ID, dropping byte-identical duplicates. Two
// records with the same content in any order become byte-identical.
func (r *Record) Canonicalize() {
	r.Version = RecordVersion
	slices.SortStableFunc(r.Contributions, func(a, b Contribution) int { return strings.Compare(a.Peer, b.Peer) })
	var cs []Contribution
	for _, c := range r.Contributions {
		if n := len(cs); n > 0 && cs[n-1].Peer == c.Peer {
			cs[n-1].Shards = append(cs[n-1].Shards, c.Shards...)
			cs[n-1].Dropped = cs[n-1].Dropped || c.Dropped
			continue
		}
		cs = append(cs, Contribution{Peer: c.Peer, Shards: slices.Clone(c.Shards), Dropped: c.Dropped})
	}
	for i := range cs {
		slices.SortFunc(cs[i].Shards, bytes.Compare)
		cs[i].Shards = slices.CompactFunc(cs[i].Shards, bytes.Equal)
	}
	r.Contributions = cs
	ids := make(map[ID]Evidence, len(r.Evidence))
	for _, e := range r.Evidence {
		if e.Kind == KindEquivocation {
			e.Headers = slices.Clone(e.Headers) // never reorder the caller's slice
			e.sortHeaders()
		}
		ids[e.ID()] = e
	}
	keys := make([]ID, 0, len(ids))
	for id := range ids {
		keys = append(keys, id)
	}
	slices.SortFunc(keys, func(a, b ID) int { return bytes.Compare(a[:], b[:]) })
	r.Evidence = r.Evidence[:0]
	for _, id := range keys {
		r.Evidence = append(r.Evidence, ids[id])
	}
}

// DecodeRecord decodes a record. The size is checked first; unknown fields, non-canonical
// encodings, unsorted lists and broken limits are refused (ErrMalformed). Evidence is
// decoded for shape only: Apply checks it.
func DecodeRecord(data []byte) (*Record, error) {
	var r Record
	if err := decodeCanonical(decMode, "record", data, MaxRecordSize, &r); err != nil {
		return nil, err
	}
	if err := r.checkShape(); err != nil {
		return nil, err
	}
	return &r, nil
}

// checkShape checks limits and canonical order.
func (r *Record) checkShape() error {
	switch {
	case r.Version != RecordVersion:
		return fmt.Errorf("%w: record version %d, this build reads %d", ErrMalformed, r.Version, RecordVersion)
	case len(r.PrevRoot) != 32:
		return fmt.Errorf("%w: previous root is %d bytes", ErrMalformed, len(r.PrevRoot))
	case len(r.NewRoot) != 32:
		return fmt.Errorf("%w: new root is %d bytes", ErrMalformed, len(r.NewRoot))
	case len(r.ModelRoot) > MaxRootSize:
		return fmt.Errorf("%w: model root is %d bytes", ErrMalformed, len(r.ModelRoot))
	case len(r.Contributions) > MaxContributions:
		return fmt.Errorf("%w: %d contributions, limit %d", ErrMalformed, len(r.Contributions), MaxContributions)
	case len(r.Evidence) > MaxEvidencePerRecord:
		return fmt.Errorf("%w: %d evidence items, limit %d", ErrMalformed, len(r.Evidence), MaxEvidencePerRecord)
	}
	if err := checkContributions(r.Contributions); err != nil {
		return err
	}
	if err := r.checkEvidenceOrder(); err != nil {
		return err
	}
	return r.checkSize()
}

// checkSize: the inclusion list fits MaxContributionsSize and the whole record
// MaxRecordSize, so every record Build writes or Apply takes can be decoded and gossiped.
func (r *Record) checkSize() error {
	if n := len(marshal(r.Contributions)); n > MaxContributionsSize {
		return fmt.Errorf("%w: contributions are %d bytes, limit %d", ErrMalformed, n, MaxContributionsSize)
	}
	if n := len(r.Marshal()); n > MaxRecordSize {
		return fmt.Errorf("%w: record is %d bytes, limit %d", ErrMalformed, n, MaxRecordSize)
	}
	return nil
}

func checkContributions(cs []Contribution) error {
	for i, c := range cs {
		if err := verify.CheckPeerID(c.Peer); err != nil {
			return fmt.Errorf("%w: contribution: %v", ErrMalformed, err)
		}
		switch {
		case i > 0 && cs[i-1].Peer >= c.Peer:
			return fmt.Errorf("%w: contributions not sorted by peer (or repeated)", ErrMalformed)
		case len(c.Shards) == 0 || len(c.Shards) > MaxShardsPerContribution:
			return fmt.Errorf("%w: contribution of %s has %d shards", ErrMalformed, c.Peer, len(c.Shards))
		}
		for j, s := range c.Shards {
			if len(s) == 0 || len(s) > maxCIDSize {
				return fmt.Errorf("%w: shard CID of %d bytes", ErrMalformed, len(s))
			}
			if j > 0 && bytes.Compare(c.Shards[j-1], s) >= 0 {
				return fmt.Errorf("%w: shards of %s not sorted (or repeated)", ErrMalformed, c.Peer)
			}
		}
	}
	return nil
}

func (r *Record) checkEvidenceOrder() error {
	var prev ID
	for i := range r.Evidence {
		if err := r.Evidence[i].checkShape(); err != nil {
			return err
		}
		id := r.Evidence[i].ID()
		if i > 0 && bytes.Compare(prev[:], id[:]) >= 0 {
			return fmt.Errorf("%w: evidence not sorted by ID (or repeated)", ErrMalformed)
		}
		prev = id
	}
	return nil
}
