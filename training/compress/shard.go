package compress

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"

	"github.com/ipfs/go-cid"
	mh "github.com/multiformats/go-multihash"
)

// ErrShards is returned (wrapped) by Join for a set of shards that is not one complete message.
var ErrShards = errors.New("inconsistent shard set")

// Shard is one independently decodable part of a Message. Data is its canonical encoding and
// CID = CIDOf(Data).
type Shard struct {
	Index, Count int
	CID          cid.Cid
	Data         []byte
}

// CIDOf returns the CIDv1 (codec raw, multihash sha2-256) of data.
func CIDOf(data []byte) cid.Cid {
	sum := sha256.Sum256(data)
	h, err := mh.Encode(sum[:], mh.SHA2_256)
	if err != nil { // sha2-256 is always a known code with a 32-byte digest
		panic(err)
	}
	return cid.NewCidV1(cid.Raw, h)
}

// envelope is an upper bound on the encoded size of a message minus its pieces.
const envelope = 48

// Shards splits m into shards of at most the Encoder's MaxShardBytes encoded bytes.
func (m *Message) Shards() ([]Shard, error) { return m.ShardsOf(m.maxShard) }

// ShardsOf splits m into shards of at most maxBytes (in [MinShardBytes, HardMaxShardBytes])
// encoded bytes each: whole pieces packed greedily in order, pieces too big for one shard
// split at block-aligned row (low-rank) or element (dense) boundaries.
func (m *Message) ShardsOf(maxBytes int) ([]Shard, error) {
	if maxBytes < MinShardBytes || maxBytes > HardMaxShardBytes {
		return nil, fmt.Errorf("%w: shard cap %d", ErrConfig, maxBytes)
	}
	if len(m.pieces) == 0 {
		return nil, fmt.Errorf("%w: empty message", ErrShards)
	}
	budget := maxBytes - envelope
	var groups [][]piece
	var cur []piece
	curSize := 0
	add := func(p piece, size int) {
		if curSize+size > budget && len(cur) > 0 {
			groups, cur, curSize = append(groups, cur), nil, 0
		}
		cur, curSize = append(cur, p), curSize+size
	}
	for _, p := range m.pieces {
		size, err := pieceSize(p)
		if err != nil {
			return nil, err
		}
		if size <= budget {
			add(p, size)
			continue
		}
		chunks, err := m.split(p, budget)
		if err != nil {
			return nil, err
		}
		for _, c := range chunks {
			s, _ := pieceSize(c)
			add(c, s)
		}
	}
	groups = append(groups, cur)
	return m.encodeShards(groups, maxBytes)
}

func (m *Message) encodeShards(groups [][]piece, maxBytes int) ([]Shard, error) {
	out := make([]Shard, len(groups))
	for i, g := range groups {
		s := &Message{part: i, parts: len(groups), block: m.block, pieces: g}
		data, err := s.marshal()
		if err != nil {
			return nil, err
		}
		if len(data) > maxBytes { // the size accounting above is an upper bound
			return nil, fmt.Errorf("shard %d is %d bytes > %d", i, len(data), maxBytes)
		}
		out[i] = Shard{Index: i, Count: len(groups), CID: CIDOf(data), Data: data}
	}
	return out, nil
}

func pieceSize(p piece) (int, error) {
	b, err := encMode.Marshal(&p)
	return len(b), err
}

// split cuts p into consecutive slices of at most budget encoded bytes, at multiples of the
// block size in units (rows for low-rank pieces, elements for dense ones), so every slice's
// columns start a block.
func (m *Message) split(p piece, budget int) ([]piece, error) {
	if p.Sparse {
		return nil, fmt.Errorf("%w: sparse tensor %q does not fit a %d-byte shard", ErrTooLarge, p.Name, budget+envelope)
	}
	step := m.block
	fixed, _ := pieceSize(p.slice(p.Lo, p.Lo+min(step, p.Hi-p.Lo), m.block))
	if fixed > budget {
		return nil, fmt.Errorf("%w: tensor %q cannot be split under a %d-byte shard", ErrTooLarge, p.Name, budget+envelope)
	}
	cb, sb := colsBytes(step, p.ncol(), p.Bits, m.block)
	if cb+sb == 0 { // shared coordinates only: no part of the piece grows with its rows
		return []piece{p}, nil
	}
	k := (budget - fixed) / (cb + sb) // steps per slice beyond the first
	var out []piece
	for lo := p.Lo; lo < p.Hi; {
		hi := min(p.Hi, lo+(k+1)*step)
		c := p.slice(lo, hi, m.block)
		if size, _ := pieceSize(c); size > budget {
			if k == 0 {
				return nil, fmt.Errorf("%w: tensor %q cannot be split under a %d-byte shard", ErrTooLarge, p.Name, budget+envelope)
			}
			k--
			continue
		}
		out = append(out, c)
		lo = hi
	}
	return out, nil
}

// ncol is the number of stored columns in Codes: the rank for low-rank pieces, else 1.
func (p *piece) ncol() int {
	if p.lowRank() {
		return p.Rank
	}
	return 1
}

// slice returns units [lo, hi) of p (absolute rows or elements); lo-p.Lo must be a multiple
// of the block size, and so must hi-p.Lo unless hi = p.Hi.
func (p piece) slice(lo, hi, block int) piece {
	n, v0, m := p.Hi-p.Lo, lo-p.Lo, hi-lo
	cb, sb := codeBytes(n, p.Bits), scaleBytes(n, p.Bits, block)
	c := p
	c.Lo, c.Hi = lo, hi
	nc, ns := colsBytes(m, p.ncol(), p.Bits, block)
	c.Codes, c.Scales = make([]byte, 0, nc), make([]byte, 0, ns)
	for k := 0; k < p.ncol(); k++ {
		col := p.Codes[k*cb : (k+1)*cb][codeBytes(v0, p.Bits):]
		c.Codes = append(c.Codes, col[:codeBytes(m, p.Bits)]...)
		sc := p.Scales[k*sb : (k+1)*sb][scaleBytes(v0, p.Bits, block):]
		c.Scales = append(c.Scales, sc[:scaleBytes(m, p.Bits, block)]...)
	}
	return c
}

// Join reassembles the complete set of a worker's shards (any order) into one Message, merging
// the slices of split tensors back together. Join of all of m.Shards() encodes to the same
// bytes as m.
func Join(parts []*Message) (*Message, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: no shards", ErrShards)
	}
	if slices.Contains(parts, nil) {
		return nil, fmt.Errorf("%w: nil shard", ErrShards)
	}
	sorted := slices.Clone(parts)
	slices.SortFunc(sorted, func(a, b *Message) int { return a.part - b.part })
	out := &Message{parts: 1, block: sorted[0].block, maxShard: DefaultMaxShardBytes}
	for i, s := range sorted {
		if s.parts != len(parts) || s.part != i || s.block != out.block {
			return nil, fmt.Errorf("%w: part %d of %d (block %d) at position %d of %d", ErrShards, s.part, s.parts, s.block, i, len(parts))
		}
		for _, p := range s.pieces {
			n := len(out.pieces)
			if n > 0 && mergeable(out.pieces[n-1], p, out.block) {
				out.pieces[n-1] = merge(out.pieces[n-1], p, out.block)
			} else {
				out.pieces = append(out.pieces, p)
			}
		}
	}
	return out, nil
}

// mergeable reports whether b continues a with the same encoding and block alignment.
func mergeable(a, b piece, block int) bool {
	return !a.Sparse && !b.Sparse && a.Name == b.Name && slices.Equal(a.Shape, b.Shape) && a.Rank == b.Rank && a.Bits == b.Bits &&
		a.Hi == b.Lo && (a.Hi-a.Lo)%block == 0 &&
		bytes.Equal(a.QCodes, b.QCodes) && bytes.Equal(a.QScales, b.QScales) &&
		a.SRank == b.SRank && bytes.Equal(a.SCodes, b.SCodes) && bytes.Equal(a.SScales, b.SScales)
}

// merge joins two mergeable pieces column by column.
func merge(a, b piece, block int) piece {
	na, nb := a.Hi-a.Lo, b.Hi-b.Lo
	ca, sa := codeBytes(na, a.Bits), scaleBytes(na, a.Bits, block)
	cb, sb := codeBytes(nb, b.Bits), scaleBytes(nb, b.Bits, block)
	c := a
	c.Hi = b.Hi
	nc, ns := colsBytes(na+nb, a.ncol(), a.Bits, block)
	c.Codes, c.Scales = make([]byte, 0, nc), make([]byte, 0, ns)
	for k := 0; k < a.ncol(); k++ {
		c.Codes = append(append(c.Codes, a.Codes[k*ca:(k+1)*ca]...), b.Codes[k*cb:(k+1)*cb]...)
		c.Scales = append(append(c.Scales, a.Scales[k*sa:(k+1)*sa]...), b.Scales[k*sb:(k+1)*sb]...)
	}
	return c
}
