// Package round is the pure state machine of one node's DiLoCo rounds (design section 2):
// local work in, compressed contributions out; peers' contributions in; closed rounds out,
// each with its inclusion list and the new global parameters.
//
// It does no I/O, reads no clock and starts no goroutine. The caller (the node) trains,
// gossips, verifies, waits for quorum or deadline, and persists; the Machine decides what
// the bytes mean. A Machine is not safe for concurrent use.
//
// # Usage protocol
//
//	m, _ := round.New(cfg, round.State{Params: theta0})
//	start := m.Start()                        // round 0's local work starts from start.Params
//	for {
//		// ... run H inner steps from start.Params ...
//		rd, err := m.LocalDone(start.Round, localParams)
//		// gossip rd.Send.Shards
//		// meanwhile: for every verified contribution, m.Receive(c)
//		for rd.Start == nil {                 // with Delay 1: close the previous round first
//			r, ok := m.Closable()             // wait for quorum/deadline, then:
//			rd, err = m.Close(r)              // rd.Closed: inclusion list and new θ
//		}
//		start = *rd.Start
//	}
//
// # The one-step delay
//
// With Config.Delay = 1, round t is closed only after round t+1's local work is done, so the
// contributions of round t travel while round t+1 computes. Round t+1's local work therefore
// starts from θ_t (the newest global parameters when round t's local work ended) and its
// pseudo-gradient Δ_{t+1} = θ_t − θ_local is measured against θ_t. When round t is closed,
// its aggregate is applied by the outer optimizer to the global θ_t, giving θ_{t+1}; the next
// local phase (round t+2) starts from θ_{t+1}. Each pseudo-gradient is thus applied one outer
// step late, to parameters one step newer than the ones it was computed from: a staleness of
// one, as in overlapped and streaming DiLoCo variants. The outer momentum is applied
// unchanged. With Delay = 0 the machine is plain DiLoCo: round t is closed before round
// t+1's local work starts from θ_{t+1}.
//
// # The eager start
//
// With Config.StartPoint = StartEager (Delay 1 only), round t+1's local work starts instead
// from θ_t − OuterLR·s·Δ_t, where Δ_t is the node's own pseudo-gradient of round t (measured
// from its own start point, not compressed) and s its weight over the total weight included
// in the last closed round (1/M for M equal peers; before any round has closed the start is
// θ_t). With a plain SGD outer step (Momentum 0) this is the eager update of Kale et al.
// (2025): the node applies its own fresh progress at once, as a stand-in for the aggregate
// that is still travelling. Config.StartMix α replaces the weight OuterLR·s by α: the start
// θ_t − α·Δ_t is the mix α·θ_local + (1−α)·θ_t of Streaming DiLoCo (Douillard et al. 2025),
// α = 1 continuing from the node's own end point as if its progress were the aggregate's. The
// start point is private to the node; θ, the contributions' meaning and the bytes every node
// computes at Close do not change.
//
// Stability: consecutive pseudo-gradients under the delay are measured from points that do
// not include each other's progress, so they overlap, and on a quadratic the error obeys
// e_{t+1} = e_t − lr·α·e_{t−1} (α the fraction of the way to the optimum one local phase
// goes): stable only for lr·α < 1, and momentum shrinks the margin. `lowband bench train`
// measured divergence with the dense DiLoCo defaults (lr 0.7, momentum 0.9) and with
// lr 0.5 and no momentum, and stable training with lr 0.35 and momentum 0.5. With the
// error-feedback decay 0.95, plain SGD and the eager start, the delayed mode's validation
// loss on fmnist (4 workers, 12 rounds) fell as the outer lr fell: 0.84 at lr 1, 0.80 at
// 0.7, 0.59 at 0.5 (0.63 without the eager start), 0.57 at 0.35; lr 0.35 with momentum 0.5
// and neither option gave 1.06. With 2-bit factors at a 1000x byte budget (4 workers, H 5,
// 24 rounds) it gave 0.74 at lr 0.5, 0.69 at 0.35, 0.72 at 0.25. With two power iterations
// and the start mix 0.5 (StartMix), a higher lr is stable: 0.577 at lr 0.7, 0.594 at 0.5,
// 0.630 at 0.35, 0.658 at 1, against 0.583 for the same budget without the delay at lr 0.7.
// With half the error-feedback residual or more in the start (StartResidual, below), lr 1
// to 1.4 is stable too, and better at 4 workers and H 5; the network spec's default stays
// lr 0.7, no momentum, the eager start with the mix 0.5 and the residual 0.25 (README).
//
// # The merge
//
// With Config.Merge (Delay 1 only) round t may close during round t+1's local work (Closable
// says so while that work is under way; Merging tells such a close from one the delay allows
// anyway). The close moves the work to the start it would have had with round t closed, θ_{t+1}
// less the residual's term, without the eager term whose aggregate is now in θ: Ready.Shift
// is the move, which the caller adds to the local parameters at once, and the work's
// pseudo-gradient is measured from the moved base (a work that goes on from start+shift and
// ends at local sends (θ_{t+1} − γ·r) − local). The staleness then falls from a round of
// local work to the steps before the close. At 1000x (4 workers, H 5, 48 rounds, 3 seeds)
// it brought the delay's cost to 0.3-0.5% of the loss, from 1-3%.
//
// # The residual in the start
//
// With Config.StartResidual γ, local work starts γ times the codec's error-feedback
// residual further on: θ − γ·r (after the eager start's term), r being what this node's
// messages have not yet delivered of its pseudo-gradients. θ lags the point dense DiLoCo
// would have reached by about OuterLR times the mean of the nodes' residuals; a node knows
// only its own, and the starts of all the nodes average θ − γ·mean(r). The residual is
// large at a high compression ratio (a 1000x message carries 15 to 20% of its input's
// energy), and a node's own is a noisy estimate of the mean, so γ is kept below the outer
// lr. Like the eager start it changes only the node's private start, never θ.
//
// # The own message in the start
//
// With Config.StartSent σ (the eager start only), the start also subtracts σ times the
// node's own message of round t as every receiver decodes it: θ_t − α·Δ_t − σ·m_t − γ·r.
// What θ_{t+1} will add is the outer lr times the mean of the nodes' messages of round t,
// of which a node holds only its own (Δ_t is its raw progress, m_t what of Δ_t and its
// earlier residual the message's factors carry). The node keeps m_t with
// Δ_t in its local state, so that a restart starts from the same point.
//
// # Reproducibility
//
// Every node that closes round t with the same inclusion list and the same contribution bytes
// computes the same bytes of θ_{t+1}, whatever the order in which contributions arrived:
// contributions are decoded and aggregated in the order of their sorted peer IDs and the
// outer step rounds every product.
//
// CloseWith closes a round with weights the caller gives (the node's ledger decides who
// counts and how much); contributions without a positive weight are left out. State.Root
// hashes the round, θ and the outer momentum bit for bit, the model root nodes compare.
//
// Step is the same arithmetic without a Machine: what closing a round from a given State
// with exactly the given contributions and weights gives. A node that learns that a closed
// round's canonical inclusion list differs from its own recomputes the rounds since with
// Step and puts the result in force with Machine.Reset, which keeps its local state (the
// codec's error feedback, local work in progress, the eager start's own pseudo-gradient).
//
// # Restart
//
// A restarted node rebuilds the global state (New from a checkpoint's State, then Step for
// each committed round since) and restores its local state, which no root covers:
// Machine.Local at a commit, Machine.SetLocal after the restart (the codec's residuals,
// warm starts and ranks, the eager start's own pseudo-gradient and share). SkipLocal moves
// the next local work past the rounds the node may have signed shards for before it
// stopped: those close without its contribution, since signing other shards for them
// would be equivocation, and an own pseudo-gradient of a skipped round is not used.
//
// A node's own contribution is the decoded form of the message it sends, so it weighs in
// exactly as every peer sees it.
package round
