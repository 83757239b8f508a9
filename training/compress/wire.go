package compress

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/fxamacker/cbor/v2"
)

// Version is the wire format version this package writes and the only one it reads.
const Version = 1

// Decoding errors. Each is wrapped with detail; test with errors.Is.
var (
	ErrTooLarge     = errors.New("compressed message exceeds limits")
	ErrMalformed    = errors.New("malformed compressed message")
	ErrVersion      = errors.New("unknown compressed message version")
	ErrNonCanonical = errors.New("compressed message not in canonical encoding")
)

// Limits bound what DecodeShard accepts from a peer. A zero field takes DefaultLimits' value.
type Limits struct {
	MaxBytes    int // encoded size
	MaxTensors  int // pieces in one message
	MaxElements int // sum over pieces of the full declared tensor sizes
	// MaxRank bounds the rank of low-rank pieces. A receiver's work to reconstruct a shard is
	// at most MaxElements × MaxRank multiply-adds.
	MaxRank int
	// NoSparse refuses sparse pieces (the top-k codec's): a network whose codec is low-rank
	// takes none, since a sparse piece of no index covers a whole tensor in a few bytes and
	// a receiver reconstructs it whole.
	NoSparse bool
	// NoShared refuses pieces of shared coordinates (Config.SharedRank): a network that
	// derives no shared bases can bind none to them, so none is taken from a peer.
	NoShared bool
}

// DefaultLimits accepts any shard this package produces for models of up to 32M parameters.
var DefaultLimits = Limits{MaxBytes: HardMaxShardBytes, MaxTensors: 4096, MaxElements: 1 << 25, MaxRank: 128}

const maxDims = 8

// piece is one tensor or a slice of one (see the package doc). It is also the wire form.
type piece struct {
	Name    string `cbor:"1,keyasint"`
	Shape   []int  `cbor:"2,keyasint"`
	Lo      int    `cbor:"3,keyasint"`
	Hi      int    `cbor:"4,keyasint"`
	Rank    int    `cbor:"5,keyasint"` // 0 for dense pieces
	Bits    int    `cbor:"6,keyasint"`
	Codes   []byte `cbor:"7,keyasint"` // dense codes, or P's codes (rows Lo..Hi, row-major)
	Scales  []byte `cbor:"8,keyasint"`
	QCodes  []byte `cbor:"9,keyasint"` // Qᵀ's codes (rank × cols, row-major); empty when dense
	QScales []byte `cbor:"10,keyasint"`
	// Sparse pieces only (Config.Codec "topk"; see topk.go): absent from every other piece,
	// so their encoding is unchanged.
	Sparse bool   `cbor:"11,keyasint,omitempty"`
	Idx    []byte `cbor:"12,keyasint,omitempty"`
	// Shared coordinates (Config.SharedRank; see basis.go): SRank columns of the matrix's
	// shared basis, and their coordinates C = Uᵀ·x stored like Q (SRank columns of cols
	// values, whole in every row slice). Absent from every other piece.
	SRank   int    `cbor:"13,keyasint,omitempty"`
	SCodes  []byte `cbor:"14,keyasint,omitempty"`
	SScales []byte `cbor:"15,keyasint,omitempty"`
	// basis is the shared basis bound to the piece by Message.WithBases (never encoded).
	basis *Basis
}

type wireMessage struct {
	Version int     `cbor:"1,keyasint"`
	Part    int     `cbor:"2,keyasint"`
	Parts   int     `cbor:"3,keyasint"`
	Block   int     `cbor:"4,keyasint"`
	Pieces  []piece `cbor:"5,keyasint"`
}

var (
	encMode cbor.EncMode
	decMode cbor.DecMode
)

func init() {
	eo := cbor.CoreDetEncOptions()
	eo.NilContainers = cbor.NilContainerAsEmpty
	var err error
	if encMode, err = eo.EncMode(); err != nil {
		panic(err)
	}
	dm, err := cbor.DecOptions{
		DupMapKey:         cbor.DupMapKeyEnforcedAPF,
		MaxNestedLevels:   8,
		MaxArrayElements:  1 << 16,
		MaxMapPairs:       16,
		IndefLength:       cbor.IndefLengthForbidden,
		TagsMd:            cbor.TagsForbidden,
		ExtraReturnErrors: cbor.ExtraDecErrorUnknownField,
	}.DecMode()
	if err != nil {
		panic(err)
	}
	decMode = dm
}

// marshal returns the canonical encoding of m.
func (m *Message) marshal() ([]byte, error) {
	w := wireMessage{Version: Version, Part: m.part, Parts: m.parts, Block: m.block, Pieces: m.pieces}
	return encMode.Marshal(&w)
}

// DecodeShard decodes one encoded Message (a shard, or a whole message) from a peer. It checks
// the size, the structure, the version, every declared size against lim and against the
// bytes present, and canonical form, before any tensor is allocated. It refuses raw float64
// pieces (Config.NoQuant): values from a peer are codes times bfloat16 scales. It does not
// look at values: Message.Decode and CheckShard do.
func DecodeShard(data []byte, lim Limits) (*Message, error) {
	lim = lim.withDefaults()
	if len(data) > lim.MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes > %d", ErrTooLarge, len(data), lim.MaxBytes)
	}
	var w wireMessage
	if err := decMode.Unmarshal(data, &w); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if w.Version != Version {
		return nil, fmt.Errorf("%w: %d", ErrVersion, w.Version)
	}
	m := &Message{part: w.Part, parts: w.Parts, block: w.Block, pieces: w.Pieces, maxShard: DefaultMaxShardBytes}
	if err := m.validate(lim); err != nil {
		return nil, err
	}
	again, err := m.marshal()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if !bytes.Equal(again, data) {
		return nil, ErrNonCanonical
	}
	return m, nil
}

func (l Limits) withDefaults() Limits {
	fill(&l.MaxBytes, DefaultLimits.MaxBytes)
	fill(&l.MaxTensors, DefaultLimits.MaxTensors)
	fill(&l.MaxElements, DefaultLimits.MaxElements)
	fill(&l.MaxRank, DefaultLimits.MaxRank)
	return l
}

// validate checks the envelope and every piece's declared sizes.
func (m *Message) validate(lim Limits) error {
	if m.parts < 1 || m.part < 0 || m.part >= m.parts {
		return fmt.Errorf("%w: part %d of %d", ErrMalformed, m.part, m.parts)
	}
	if m.block < 2 || m.block > 1<<16 || m.block%2 != 0 {
		return fmt.Errorf("%w: block size %d", ErrMalformed, m.block)
	}
	if len(m.pieces) == 0 || len(m.pieces) > lim.MaxTensors {
		return fmt.Errorf("%w: %d tensors (limit %d)", ErrTooLarge, len(m.pieces), lim.MaxTensors)
	}
	maxRank := min(lim.MaxRank, MaxRank)
	total := 0
	for i := range m.pieces {
		if lim.NoSparse && m.pieces[i].Sparse {
			return fmt.Errorf("tensor %d %q: %w: a sparse piece in a network of the low-rank codec", i, m.pieces[i].Name, ErrMalformed)
		}
		if lim.NoShared && m.pieces[i].SRank != 0 {
			return fmt.Errorf("tensor %d %q: %w: shared coordinates in a network without shared bases", i, m.pieces[i].Name, ErrMalformed)
		}
		n, err := m.pieces[i].validate(m.block, maxRank)
		if err != nil {
			return fmt.Errorf("tensor %d %q: %w", i, m.pieces[i].Name, err)
		}
		if total += n; total > lim.MaxElements {
			return fmt.Errorf("%w: more than %d elements", ErrTooLarge, lim.MaxElements)
		}
	}
	return nil
}

// validate checks a piece's declared sizes against each other and against the bytes it
// carries, and returns the full tensor's element count.
func (p *piece) validate(block, maxRank int) (int, error) {
	if p.Name == "" || len(p.Name) > 256 {
		return 0, fmt.Errorf("%w: name length %d", ErrMalformed, len(p.Name))
	}
	if len(p.Shape) == 0 || len(p.Shape) > maxDims {
		return 0, fmt.Errorf("%w: %d dimensions", ErrMalformed, len(p.Shape))
	}
	n := 1
	for _, d := range p.Shape {
		if d < 1 || d > 1<<31 {
			return 0, fmt.Errorf("%w: dimension %d", ErrMalformed, d)
		}
		if d > (1<<40)/n {
			return 0, fmt.Errorf("%w: tensor too large", ErrTooLarge)
		}
		n *= d
	}
	if p.Bits == bitsRaw {
		return 0, fmt.Errorf("%w: raw float64 values (Config.NoQuant) are not accepted from peers", ErrMalformed)
	}
	if p.Bits != bits4 && p.Bits != bits8 && p.Bits != bits2 && p.Bits != bits1 {
		return 0, fmt.Errorf("%w: code width %d", ErrMalformed, p.Bits)
	}
	if p.Bits == bits2 && (!p.lowRank() || block%4 != 0) {
		return 0, fmt.Errorf("%w: 2-bit codes for a dense piece or with block size %d", ErrMalformed, block)
	}
	if p.Bits == bits1 && (!p.lowRank() || block%8 != 0) {
		return 0, fmt.Errorf("%w: 1-bit codes for a dense piece or with block size %d", ErrMalformed, block)
	}
	if p.Rank < 0 || p.SRank < 0 {
		return 0, fmt.Errorf("%w: rank %d, shared rank %d", ErrMalformed, p.Rank, p.SRank)
	}
	if !p.lowRank() && (p.SRank != 0 || len(p.SCodes) != 0 || len(p.SScales) != 0) {
		return 0, fmt.Errorf("%w: shared coordinates in a dense or sparse piece", ErrMalformed)
	}
	if p.Sparse {
		return n, p.checkSparse(n, block)
	}
	if len(p.Idx) != 0 {
		return 0, fmt.Errorf("%w: indices in a piece that is not sparse", ErrMalformed)
	}
	if !p.lowRank() {
		return n, p.checkDense(n, block)
	}
	return n, p.checkLowRank(block, maxRank)
}

func (p *piece) checkDense(n, block int) error {
	if p.Lo < 0 || p.Hi <= p.Lo || p.Hi > n {
		return fmt.Errorf("%w: element range [%d, %d) of %d", ErrMalformed, p.Lo, p.Hi, n)
	}
	if len(p.QCodes) != 0 || len(p.QScales) != 0 {
		return fmt.Errorf("%w: dense tensor with Q factor", ErrMalformed)
	}
	return checkCodes(p.Codes, p.Scales, p.Hi-p.Lo, 1, p.Bits, block)
}

func (p *piece) checkLowRank(block, maxRank int) error {
	if len(p.Shape) != 2 {
		return fmt.Errorf("%w: low-rank tensor with %d dimensions", ErrMalformed, len(p.Shape))
	}
	rows, cols := p.Shape[0], p.Shape[1]
	if p.Rank < 1 || p.Rank > maxRank || p.Rank > min(rows, cols) {
		return fmt.Errorf("%w: rank %d for %dx%d", ErrMalformed, p.Rank, rows, cols)
	}
	if p.SRank < 0 || p.SRank > MaxSharedRank || p.SRank > maxRank-p.Rank || p.SRank > cols || p.SRank > 0 && rows < cols {
		return fmt.Errorf("%w: shared rank %d with rank %d for %dx%d", ErrMalformed, p.SRank, p.Rank, rows, cols)
	}
	if p.Lo < 0 || p.Hi <= p.Lo || p.Hi > rows {
		return fmt.Errorf("%w: row range [%d, %d) of %d", ErrMalformed, p.Lo, p.Hi, rows)
	}
	if err := checkCodes(p.Codes, p.Scales, p.Hi-p.Lo, p.Rank, p.Bits, block); err != nil {
		return fmt.Errorf("P: %w", err)
	}
	if err := checkCodes(p.QCodes, p.QScales, cols, p.Rank, p.Bits, block); err != nil {
		return fmt.Errorf("Q: %w", err)
	}
	if err := checkCodes(p.SCodes, p.SScales, cols, p.SRank, p.Bits, block); err != nil {
		return fmt.Errorf("shared coordinates: %w", err)
	}
	return nil
}

// checkCodes checks the lengths of ncol columns of n values each, and their padding.
func checkCodes(codes, scales []byte, n, ncol, bits, block int) error {
	nc, ns := colsBytes(n, ncol, bits, block)
	if len(codes) != nc || len(scales) != ns {
		return fmt.Errorf("%w: %d code bytes and %d scale bytes for %d×%d values", ErrMalformed, len(codes), len(scales), ncol, n)
	}
	if !colsCanonical(codes, n, ncol, bits) {
		return fmt.Errorf("%w: non-zero padding nibble", ErrNonCanonical)
	}
	return nil
}
