// Package training is lowband's compute core: models over named parameter tensors, data
// sets and per-node slices, the inner optimizer (AdamW with clipping and a warmup + cosine
// schedule) and the outer optimizer (SGD with Nesterov momentum on pseudo-gradients).
//
// The package is pure: it never touches the network, the filesystem or the clock. Data
// comes in as io.Reader or byte slices, randomness as a seed or a *rand.Rand.
//
// # Models
//
// A Model exposes its parameters as a fixed, ordered list of *Param (name, shape, values,
// gradient). LossGrad runs forward and backward on a Batch and overwrites every gradient;
// Eval runs forward only. Three models are built from the same layers (Embedding, Linear,
// ReLU, softmax cross-entropy):
//
//   - NewCharLM: a character-level MLP language model in the style of Bengio et al. (2003):
//     a window of Context characters is embedded, concatenated and fed through hidden ReLU
//     layers to a softmax over the corpus vocabulary.
//   - NewClassifier: an MLP classifier over dense features (Fashion-MNIST images).
//   - the same classifier over NewSynthetic data: a tiny teacher task for fast tests.
//
// # Data
//
// NewCorpus reads a text, builds a byte-level vocabulary and splits it into a training part
// and a held-out tail. ReadIDX parses IDX files (sizes checked before allocation) and
// NewImageData builds a labelled image set from them. NodeSlice deals a data set's samples
// to a known number of nodes in chunks: deterministic from a seed, disjoint between nodes.
// PeerSlice gives a peer of a permissionless network its slice with no node count: a share
// of the chunks ranked by a hash of the seed and the peer's ID, which anyone re-derives;
// two peers' slices overlap as two random choices do. A Batcher draws shuffled batches from
// a slice.
//
// # One round of DiLoCo
//
// Inner runs H inner steps on a model (AdamW, clipping, schedule); the pseudo-gradient is
// the global parameters minus the local ones; Nesterov applies the aggregated
// pseudo-gradient to the global parameters. The round state machine that the node drives,
// with compression, aggregation and the one-step delay, is in package training/round.
package training
