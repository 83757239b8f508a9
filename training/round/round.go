package round

import (
	"errors"

	"github.com/lowband/lowband/training"
	"github.com/lowband/lowband/training/aggregate"
	"github.com/lowband/lowband/training/compress"
)

// Errors returned by the Machine's events (wrapped with detail; test with errors.Is).
var (
	// ErrOrder: an event out of protocol order (local work for the wrong round, closing a
	// round that is not the next one or not yet due).
	ErrOrder = errors.New("round: event out of order")
	// ErrClosed: a contribution for a round that is already closed.
	ErrClosed = errors.New("round: round already closed")
	// ErrFuture: a contribution for a round too far ahead of this node.
	ErrFuture = errors.New("round: round too far in the future")
	// ErrDuplicate: a second contribution from the same peer for the same round.
	ErrDuplicate = errors.New("round: duplicate contribution")
	// ErrInvalid: a contribution that fails the content checks or has a bad weight.
	ErrInvalid = errors.New("round: invalid contribution")
)

// Config sets up a Machine. Every node of a network must use the same values except Self
// and Weight.
type Config struct {
	Self   string  // this node's peer ID
	Weight float64 // weight of this node's own contribution (> 0)
	// Delay is 0 (close round t before round t+1's local work) or 1 (the one-step delay).
	Delay int
	// Window is how many rounds beyond the one in local work a contribution may be for
	// (0 means 1).
	Window uint64
	// OuterLR and Momentum configure the Nesterov outer optimizer; Momentum 0 is plain SGD.
	OuterLR, Momentum float64
	// StartPoint is where this node's local work starts: StartGlobal (empty means
	// StartGlobal) or StartEager, which needs Delay 1. See the package doc. It changes only
	// this node's private start, never θ.
	StartPoint string
	// StartMix, with StartEager, is the weight α of this node's own progress in its start:
	// θ − α·own, the mix α·θ_local + (1−α)·θ of Streaming DiLoCo (own being the node's
	// last pseudo-gradient, not yet in θ). In [0, 1]; 0 means OuterLR times the node's share
	// of the last close, the eager update.
	StartMix float64
	// StartResidual is the weight γ of this node's error-feedback residual (what its
	// messages have not yet delivered, compress.Encoder.Residual) in its start: local work
	// starts from θ − γ·residual, after the eager start's term if any. With every node doing
	// so, the starts average θ less γ times the mean residual, a step towards the point
	// dense DiLoCo would have reached. In [0, 1]; 0 (the default) leaves the start as it is.
	// It changes only this node's private start, never θ.
	StartResidual float64
	// StartSent, with StartEager, is the weight σ of this node's own last message (its
	// pseudo-gradient as every receiver decodes it, not yet in θ) subtracted from its
	// start, besides StartMix's share of the raw pseudo-gradient. In [0, 1]; 0 (the
	// default) is none.
	StartSent float64
	// Merge, with Delay 1, lets the round before the local work under way close during
	// that work, as soon as the caller has its contributions, and moves the work to the
	// start it would have had with that round closed (θ after it, less the residual's
	// term; no eager term, the aggregate it stood in for being in θ now): the close's
	// Ready.Shift is what the caller adds to the local parameters at once, and the work's
	// pseudo-gradient is measured from the moved base. The delay's staleness then falls
	// from a round of local work to the steps before the close, as with Streaming DiLoCo's
	// overlap and merge. It changes only this node's private start and what its message
	// measures from, never θ. Without it a round closes only after the next local work
	// ends.
	Merge bool
	// MaxNorm bounds the L2 norm of one contribution (0 means no bound).
	MaxNorm   float64
	Compress  compress.Config
	Aggregate aggregate.Config
	// Meter, if not nil, is told when the encode, decode, aggregate and outer phases begin
	// and end.
	Meter Meter
}

// State is what a Machine restarts from: the global parameters after closing Round-1 (so
// Round is the first round still open) and the outer momentum (nil for none yet).
type State struct {
	Round    uint64
	Params   []training.Tensor
	Momentum []float64
}

// Contribution is a peer's verified, reassembled contribution for a round.
type Contribution struct {
	Round  uint64
	Peer   string
	Weight float64
	Msg    *compress.Message
}

// Outbound is this node's contribution for a round: the message and its shards to gossip.
type Outbound struct {
	Round  uint64
	Msg    *compress.Message
	Shards []compress.Shard
}

// Closed is the outcome of closing a round.
type Closed struct {
	Round uint64
	// Included lists the peer IDs whose contributions were aggregated, sorted.
	Included []string
	// Rejected lists peers whose contribution failed to decode at close (sorted); they are
	// not in Included.
	Rejected []string
	// Dropped lists the peers of Included whose contribution the aggregation rule left out
	// whole (sorted; aggregate.AggregateStreamTo: filtered_mean's inputs beyond its
	// radius). They were inputs of the rule, which judged the others by them too, but
	// have no part in the aggregate.
	Dropped []string
	// Params is θ after the round's outer step. The caller may keep it and must not modify
	// it: it is the Machine's own θ until the next close or Reset.
	Params []training.Tensor
}

// Start tells the caller to start local work for Round from Params (which it owns).
type Start struct {
	Round  uint64
	Params []training.Tensor
}

// Ready is the output of an event. Nil fields mean nothing to do.
type Ready struct {
	Send   *Outbound
	Closed *Closed
	Start  *Start
	// Shift, from a close during local work (Config.Merge), is what the caller adds to
	// the local parameters of the work under way (which it owns).
	Shift []training.Tensor
}

// Machine is one node's round state. See the package doc for the protocol.
type Machine struct {
	cfg    Config
	enc    *compress.Encoder
	layout                   // names, shapes and offsets of θ's tensors
	theta  []float64         // never written in place: Snapshot and Closed.Params share it
	outer  training.Nesterov // its momentum likewise

	nextClose uint64    // first round not yet closed
	nextLocal uint64    // round of the local work in progress or next to start
	started   bool      // local work for nextLocal has been started
	base      []float64 // the point the local work of nextLocal started from, kept only once a Reset or a merging close changed θ under it (else startPoint makes it again)
	own       []float64 // this node's last pseudo-gradient (eager start only)
	sent      []float64 // this node's last message as decoded (StartSent only), with own
	share     float64   // this node's share of the weight included in the last close
	finished  bool
	contrib   map[uint64]map[string]Contribution
	bases     *compress.Bases // the shared bases of round nextClose, once derived (nil: not yet)
}
