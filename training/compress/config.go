package compress

import (
	"errors"
	"fmt"
)

// Defaults filled in by Config.Validate for zero fields.
const (
	DefaultRankMin       = 1
	DefaultRankMax       = 32
	DefaultEnergyTarget  = 0.5
	DefaultPowerIters    = 1
	DefaultBlockSize     = 64
	DefaultMinLowRank    = 4096
	DefaultMaxShardBytes = 256 << 10
	DefaultDenseBits     = 8
	DefaultFeedbackDecay = 1
	DefaultFactorBits    = 4

	// HardMaxShardBytes is the largest shard the codec ever produces or accepts.
	HardMaxShardBytes = 512 << 10
	// MinShardBytes is the smallest shard cap Validate accepts.
	MinShardBytes = 4 << 10
	// MaxRank bounds any rank, on both the encoding and the decoding side.
	MaxRank = 1024
	// MaxFirstBudget bounds Config.FirstBudget.
	MaxFirstBudget = 16
	// MaxDenseEvery bounds Config.DenseEvery.
	MaxDenseEvery = 64
	// MaxFragments bounds Config.Fragments.
	MaxFragments = 16
)

// ErrConfig is returned (wrapped) by Config.Validate and NewEncoder for an invalid Config.
var ErrConfig = errors.New("invalid compression config")

// Config sets up an Encoder. Zero fields take the defaults above.
type Config struct {
	// RankMin and RankMax bound the adaptive rank of each low-rank tensor (also clamped to
	// min(rows, cols)). A tensor starts at RankMin.
	RankMin, RankMax int
	// EnergyTarget is the fraction of ‖delta+residual‖² the rank aims to capture, in (0, 1].
	EnergyTarget float64
	// PowerIters is the number of power iterations per round, warm-started from last round's Q.
	PowerIters int
	// BlockSize is the number of values sharing one quantisation scale; even, in [8, 4096].
	BlockSize int
	// MinLowRank: 2-D tensors with fewer elements than this are sent dense.
	MinLowRank int
	// MaxShardBytes caps one shard's encoded size, in [MinShardBytes, HardMaxShardBytes].
	MaxShardBytes int
	// DenseBits is the code width for dense tensors: 8 (default) or 4.
	DenseBits int
	// FactorBits is the code width of low-rank factors: 4 (default), 2, which doubles the
	// rank a byte budget buys (BlockSize must then be a multiple of 4), or 1, a sign per
	// value and a scale per block, which nearly doubles it again (BlockSize a multiple of 8;
	// the sender then fits Q to the quantised P by least squares).
	FactorBits int
	// FeedbackDecay scales the error-feedback residual before the next round's
	// pseudo-gradient is added to it: x = FeedbackDecay·residual + delta. In (0, 1]; 1 keeps
	// the whole residual (the default), lower values forget old, unsent parts geometrically.
	FeedbackDecay float64
	// ByteBudget, when above 0, replaces the adaptive rank: every round the ranks of all
	// low-rank tensors (within [RankMin, RankMax]) are chosen together, by estimated
	// captured energy per byte, so that the message's codes and scales
	// (Message.PayloadBytes) stay within ByteBudget bytes. Encode fails with ErrBudget when
	// the dense tensors and the lowest ranks alone do not fit.
	ByteBudget int
	// FirstBudget, with ByteBudget, is the budget of the Encoder's first message as a
	// multiple of ByteBudget, in [1, 16]; 0 means 1. The first pseudo-gradient is the
	// largest. The extra bytes are a debt the next messages repay: each gets ByteBudget less
	// the debt still owed, but never less than the dense tensors and the lowest ranks need,
	// so that once the debt is repaid the messages have spent no more than ByteBudget each
	// on average.
	FirstBudget float64
	// DenseEvery, above 1, sends the dense tensors (those not sent low-rank: biases and
	// other small tensors) only every DenseEvery-th round, in rotation, so that the byte
	// budget goes to the matrices: see Due. A dense tensor not due in a round is left out
	// of the message and its pseudo-gradient is added to its residual, all of which it
	// sends when it is next due. 0 and 1 send every tensor every round. A round's message
	// must follow its round's schedule: encode it with EncodeRound.
	DenseEvery int
	// Fragments, above 1, splits the low-rank matrices into that many groups, sent in turn
	// (the fragments of Streaming DiLoCo): the j-th low-rank matrix in the model's order is
	// due in the rounds r with r mod k = j mod k, k being Fragments or the number of
	// low-rank matrices if that is smaller (see Due), so that a round's byte budget goes to
	// fewer matrices at higher ranks. A matrix not due is left out of the message and its
	// pseudo-gradient is added to its residual, as DenseEvery does for the dense tensors. 0
	// and 1 send every matrix in every round. In [0, MaxFragments]; the low-rank codec
	// without shared bases only.
	Fragments int
	// Codec is CodecLowRank ("" means it) or CodecTopK: every tensor sent as its values of
	// the largest magnitude across the whole model, with their indices, as many as
	// ByteBudget holds (which it needs; DenseEvery must be at most 1), under the same error
	// feedback. It exists to measure low-rank against top-k at equal bytes.
	Codec string
	// SharedRank, above 0, sends each low-rank matrix with at least as many rows as
	// columns, in a round whose shared basis is known (Encoder.EncodeRoundShared, from
	// DeriveBases), as coordinates on up to SharedRank columns of that basis (cols values
	// each) plus RankMin private low-rank terms that let the basis move to new directions.
	// Under a ByteBudget the allocator gives the private terms their bytes first, then
	// spends the rest on coordinates by their exact energy per byte; without one every
	// matrix sends all the basis' columns. A piece's private and shared ranks together stay
	// within RankMax (a receiver's Limits.MaxRank bounds their sum). At most
	// MaxSharedRank; the low-rank codec only.
	SharedRank int
	// SharedPowerIters is the number of power iterations DeriveBases runs before it reads
	// each shared basis off the aggregate: 0 means 1 (the default: three products of each
	// matrix with a sketch of it), -1 none (two products: the range of the matrix times
	// the sketch, which is the matrix's whole range when its rank is below the sketch's
	// width, SharedRank + SharedOversample).
	SharedPowerIters int
	// Seed makes the initial Q of every tensor deterministic.
	Seed uint64
	// NoQuant sends factors and dense tensors as raw float64 instead of quantised codes.
	// It exists for tests and analysis (it isolates the low-rank error); a network should not
	// use it.
	NoQuant bool
}

// Validate fills in defaults and rejects nonsense.
func (c *Config) Validate() error {
	fill(&c.RankMin, DefaultRankMin)
	fill(&c.RankMax, DefaultRankMax)
	fill(&c.PowerIters, DefaultPowerIters)
	fill(&c.BlockSize, DefaultBlockSize)
	fill(&c.MinLowRank, DefaultMinLowRank)
	fill(&c.MaxShardBytes, DefaultMaxShardBytes)
	fill(&c.DenseBits, DefaultDenseBits)
	fill(&c.FactorBits, DefaultFactorBits)
	if c.EnergyTarget == 0 {
		c.EnergyTarget = DefaultEnergyTarget
	}
	if c.FeedbackDecay == 0 {
		c.FeedbackDecay = DefaultFeedbackDecay
	}
	if c.FirstBudget == 0 {
		c.FirstBudget = 1
	}
	switch {
	case c.RankMin < 1 || c.RankMax < c.RankMin || c.RankMax > MaxRank:
		return fmt.Errorf("%w: rank bounds [%d, %d] (want 1 <= min <= max <= %d)", ErrConfig, c.RankMin, c.RankMax, MaxRank)
	case !(c.EnergyTarget > 0 && c.EnergyTarget <= 1):
		return fmt.Errorf("%w: energy target %v not in (0, 1]", ErrConfig, c.EnergyTarget)
	case c.PowerIters < 1 || c.PowerIters > 16:
		return fmt.Errorf("%w: power iterations %d not in [1, 16]", ErrConfig, c.PowerIters)
	case c.BlockSize < 8 || c.BlockSize > 4096 || c.BlockSize%2 != 0:
		return fmt.Errorf("%w: block size %d (want even, in [8, 4096])", ErrConfig, c.BlockSize)
	case c.MinLowRank < 4:
		return fmt.Errorf("%w: min low-rank size %d < 4", ErrConfig, c.MinLowRank)
	case c.MaxShardBytes < MinShardBytes || c.MaxShardBytes > HardMaxShardBytes:
		return fmt.Errorf("%w: max shard bytes %d not in [%d, %d]", ErrConfig, c.MaxShardBytes, MinShardBytes, HardMaxShardBytes)
	case !(c.FeedbackDecay > 0 && c.FeedbackDecay <= 1):
		return fmt.Errorf("%w: feedback decay %v not in (0, 1]", ErrConfig, c.FeedbackDecay)
	case !(c.FirstBudget >= 1 && c.FirstBudget <= MaxFirstBudget):
		return fmt.Errorf("%w: first budget %v not in [1, %d]", ErrConfig, c.FirstBudget, MaxFirstBudget)
	case c.ByteBudget < 0:
		return fmt.Errorf("%w: byte budget %d is negative", ErrConfig, c.ByteBudget)
	case c.DenseBits != 4 && c.DenseBits != 8:
		return fmt.Errorf("%w: dense bits %d (want 4 or 8)", ErrConfig, c.DenseBits)
	case c.FactorBits != 4 && c.FactorBits != 2 && c.FactorBits != 1:
		return fmt.Errorf("%w: factor bits %d (want 4, 2 or 1)", ErrConfig, c.FactorBits)
	case c.Codec != "" && c.Codec != CodecLowRank && c.Codec != CodecTopK:
		return fmt.Errorf("%w: codec %q (want %q or %q)", ErrConfig, c.Codec, CodecLowRank, CodecTopK)
	case c.Codec == CodecTopK && (c.DenseEvery > 1 || c.NoQuant || c.FirstBudget > 1):
		return fmt.Errorf("%w: top-k with dense every %d, no quantisation %v or first budget %v", ErrConfig, c.DenseEvery, c.NoQuant, c.FirstBudget)
	case c.DenseEvery < 0 || c.DenseEvery > MaxDenseEvery:
		return fmt.Errorf("%w: dense every %d not in [0, %d]", ErrConfig, c.DenseEvery, MaxDenseEvery)
	case c.Fragments < 0 || c.Fragments > MaxFragments || c.Fragments > 1 && (c.Codec == CodecTopK || c.SharedRank > 0):
		return fmt.Errorf("%w: fragments %d (want 0 to %d, with the low-rank codec and no shared rank)", ErrConfig, c.Fragments, MaxFragments)
	case c.SharedRank < 0 || c.SharedRank > MaxSharedRank || c.SharedRank > 0 && c.Codec == CodecTopK:
		return fmt.Errorf("%w: shared rank %d (want 0 to %d, with the low-rank codec)", ErrConfig, c.SharedRank, MaxSharedRank)
	case c.SharedPowerIters < -1 || c.SharedPowerIters > 1:
		return fmt.Errorf("%w: shared power iterations %d (want -1 for none, 0 or 1 for one)", ErrConfig, c.SharedPowerIters)
	case c.FactorBits == 2 && c.BlockSize%4 != 0:
		return fmt.Errorf("%w: block size %d with 2-bit factors (want a multiple of 4)", ErrConfig, c.BlockSize)
	case c.FactorBits == 1 && c.BlockSize%8 != 0:
		return fmt.Errorf("%w: block size %d with 1-bit factors (want a multiple of 8)", ErrConfig, c.BlockSize)
	}
	return nil
}

func fill(v *int, def int) {
	if *v == 0 {
		*v = def
	}
}
