// Package compress is the codec for DiLoCo pseudo-gradients: low-rank factors by warm-started
// power iteration, int4 (or 2-bit) block quantisation of the factors, int8 for vectors and small tensors,
// error feedback, an adaptive rank, a canonical versioned wire encoding and bounded shards
// addressed by CID.
//
// # Encoding
//
// An [Encoder] keeps, per tensor, the error-feedback residual, the warm-start factor Q and the
// current rank. [Encoder.Encode] takes one round's pseudo-gradient tensors and, per tensor,
// compresses x = delta + β·residual, where β is Config.FeedbackDecay (1 by default; below 1,
// what was never sent fades geometrically instead of waiting forever):
//
//   - 2-D tensors with at least Config.MinLowRank elements go low-rank: with M = x (m×n) and
//     the previous round's Q (n×r), each power iteration computes P = M·Q, orthonormalises P
//     with a Householder QR (gonum lapack64 Geqrf/Orgqr), and Q = Mᵀ·P. In the last iteration P
//     is quantised first and Q is computed from the quantised P̂, so Q compensates for P's
//     quantisation error. Q is then quantised and the receiver reconstructs P̂·Q̂ᵀ. A column of
//     P that adds nothing to the span (the input has lower rank than r) is sent as zero, and
//     the warm start gets a fresh random column there.
//   - all other tensors are quantised directly, to int8 by default (Config.DenseBits).
//
// The new residual is x minus exactly what the receiver will reconstruct, computed with the same
// dequantisation and the same reconstruction kernel that [Message.Decode] uses, so sender and
// receiver agree bit for bit. The captured energy 1 − ‖residual‖²/‖x‖² drives the rank of the
// next round: it grows by half (at least one) while below Config.EnergyTarget and shrinks by one
// when above the midpoint between the target and 1, always within [RankMin, RankMax].
//
// With Config.ByteBudget set, the ranks are instead chosen together before every round, so
// that the codes and scales of the whole message fit the budget: the dense tensors' bytes
// come off first, then, from every tensor's lowest rank, the allocator adds one component at
// a time where the estimated energy per byte is highest, while it fits. A tensor's spectrum
// is estimated from the energy of each component it captured last round (‖column of Q‖², as
// a fraction of that round's ‖x‖²), continued flat at the last component's level until the
// rest of the energy is used up, and scaled by this round's ‖x‖²; in the first round it is
// taken flat. Config.FirstBudget gives the first message (the largest pseudo-gradient) a
// multiple of the budget; the messages after it repay the extra bytes, each getting the
// budget less the debt (never less than the dense tensors and the lowest ranks need), so a
// message's size varies until the debt is repaid, and the average over the run is then
// within the budget. The debt is part of EncoderState.
//
// With Config.DenseEvery k above 1, the dense tensors go out only every k-th round, in
// rotation (Config.Due: the j-th dense tensor when (round + j) mod k = 0; low-rank tensors
// always, unless Config.Fragments k above 1 sends the j-th of n low-rank tensors only when
// round mod m = j mod m, m = min(k, n), the budget then going to fewer matrices at higher
// ranks); EncodeRound leaves the others out and adds their pseudo-gradients to their
// residuals. A receiver decodes a round's message with that round's schedule
// (Message.DecodeDue): a tensor not due counts as zero, and a message that leaves out a due
// tensor or carries one that is not due is refused. Config.Codec "topk", for measurement,
// sends instead the largest values of the whole model (sparse pieces: varint index gaps and
// quantised values) under the byte budget.
//
// # Quantisation
//
// Values are quantised symmetrically in blocks of Config.BlockSize consecutive values (in the
// stored order), one scale per block: int4 codes lie in [−7, 7], int8 codes in [−127, 127].
// The scale is max|v|/qmax rounded UP to the next bfloat16 (the top 16 bits of an IEEE float32,
// stored as 2 little-endian bytes). Rounding up guarantees |v/scale| ≤ qmax, so no value clips;
// bfloat16 keeps float32's exponent range at half the size of a float32 scale. A code is
// round-half-away-from-zero(v/scale) and dequantises to float64(code)·float64(scale).
//
// With Config.FactorBits 2, low-rank factors take 2-bit codes instead (four to a byte, the
// block size a multiple of 4), which buys twice the rank for the same bytes: a code c in
// [−2, 1] dequantises to float64(2c+1)·float64(scale), the levels ±1 and ±3 of a uniform
// quantiser without a zero. The sender tries a few scales per block (max|v|/3 and fractions
// of it, each rounded up to a bfloat16) and keeps the one with the least squared error, so
// the largest values may clip; the receiver only reads codes and scales. Dense pieces with
// 2-bit codes are refused.
//
// With Config.FactorBits 1, low-rank factors take one bit per value (eight to a byte, bit
// i%8 of byte i/8, the block size a multiple of 8): a set bit dequantises to +scale and a
// clear one to −scale, the scale being the block's mean |v| rounded to the nearest
// bfloat16. The sender fits Q to the quantised P by least squares, since signs shrink P's
// columns. Dense pieces with 1-bit codes are refused.
//
// # Wire format
//
// A [Message] is encoded as core-deterministic CBOR (RFC 8949 §4.2.1): a map with integer keys
// holding the format version, the part index and count, the block size and a list of pieces.
// A piece is one tensor, or a slice of it: for low-rank pieces the rows [Lo, Hi) of P together
// with the whole Q; for dense pieces the row-major elements [Lo, Hi). Codes and scales are
// packed byte strings (int4: two codes per byte, element 2i in the low nibble, two's
// complement). Factors are stored column by column (P as rank columns of Hi−Lo rows, Q as rank
// columns of cols values), and each column is quantised on its own, blocks starting at the
// column's start and int4 codes padded to whole bytes, so no block mixes two factor columns.
// Decoding checks the byte length, then the CBOR structure with bounded arrays and nesting,
// then every declared size against [Limits] and against the
// bytes present, before allocating any tensor; input that does not re-encode to the same bytes
// is rejected, so each content has exactly one encoding and one CID. Pieces of raw float64
// values (Config.NoQuant, for tests and analysis) are refused: what a peer sends is always
// codes and bfloat16 scales.
//
// # Shards
//
// [Message.Shards] packs pieces greedily, in tensor order, into shards of at most
// Config.MaxShardBytes encoded bytes. A tensor too big for one shard is split at multiples of
// the block size (low-rank: by row ranges, each slice carrying the whole Q; dense: by element
// ranges). A low-rank tensor whose Q alone exceeds the cap cannot be sharded (ErrTooLarge). Every shard is a decodable Message on its own, so a receiver can run [CheckShard]
// on it alone; [Join] reassembles a worker's shards into the original Message.
//
// # Determinism
//
// Encoding the same inputs with an Encoder in the same state gives the same bytes. Decoding uses
// only plain Go arithmetic in a fixed order with forced rounding (no fused multiply-add), so all
// machines reconstruct the same bits.
package compress
