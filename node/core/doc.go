// Package core holds the node's decisions as pure code: events and times in, decisions out.
// It does no I/O, reads no clock and starts no goroutine; the node's round loop calls it
// and does the I/O at the edges.
//
// # Core
//
// Core owns one node's round machine (training/round), its ledger state (incentives), the
// Deadline and the evidence waiting for a record. Its events are Start, LocalDone, Shard,
// Evidence, Record and Tick, each with the time it happened; each returns a Ready: what to
// persist (Repair, then Commit, first), publish, fetch and train, and a Summary per closed
// round. View tells the validators which rounds are open. A Core is not safe for
// concurrent use.
//
//	c, _ := core.New(cfg, state, ledger)
//	c.SetSigner(signer)                 // at start and each new epoch
//	rd, _ := c.Start(now)               // rd.Train: the first local work
//	// then, as they happen: LocalDone, Shard (verified), Evidence (checked),
//	// Record (signature checked), Tick; after each: persist rd.Repair then rd.Commit,
//	// publish rd.Publish, fetch rd.Fetch, train rd.Train.
//
// Shards: see Core.Shard for what is held and what is ignored. A round closes when the
// machine allows it (with the one-step delay, after the next round's local work) and the
// Deadline does: received stake is the voting power of the peers whose contribution is
// complete, this node's included (a round it has no contribution for, skipped on a
// restart or after Finish, waits only for the others' stake); a peer's arrival delay is the arrival of its last shard
// minus this node's own LocalDone for that round (0 when earlier). Weights come from the
// ledger in force when the round closes: a staked peer not jailed 1, an unstaked one the
// network's unstaked weight (left out at 0), a jailed one (this node too) left out; past
// what a record lists, the most voting power then the lowest peer ID win. The record lists
// exactly the aggregated contributions with their shard CIDs. Every node
// holding the same contributions and evidence when a round closes computes the same model
// root, record and ledger, whatever the order they arrived in.
//
// # Agreement
//
// Each closed round's record is signed with Config.Identity and published: it is the
// node's vote on the round's inclusion list. Record takes the peers' votes (the first of
// each signer with power in a ledger of the window, View.Voters, per round, from
// View.RepairFrom to the round after the next to close; a signer with two different
// records for a round has no vote on it, and the two become evidence) and decides each
// closed round's canonical list by the rule in docs/architecture.md ("Agreement"), a pure
// function of the records seen and the ledgers at the rounds' starts.
// For the last Config.Depth closed rounds the Core keeps the state before the close, the
// ledger in force at its start, every contribution it held (its own included, with CIDs)
// and its record. When a round's canonical list is not the one its state was closed from,
// the Core closes that round again from its snapshot with round.Step, and every later
// round (with its canonical list, or its own list through the same filters), and returns
// Ready.Repair; when it lacks a listed contribution it returns Ready.Fetch by CID and
// repairs once Shard brings them. A round that closes after records for it arrived is
// settled at once. Agreement reports where the node stands.
//
// A Core that New makes on a restart holds no closed round; Seed gives it the snapshots of
// the last Depth rounds before its state, which the restart's replay rebuilt from the
// stored records and shards, so that it repairs those rounds as a Core that never stopped
// would:
//
//	c, _ := core.New(cfg, head, ledger)
//	_ = c.Seed(snapshots)               // oldest first, ending at the round before head
//	_ = c.Resume(first, local)          // past the rounds it may have signed
//	rd, _ := c.Start(now)
//
// # Deadline
//
// Deadline decides when a round may close: on a quorum of stake plus an adaptive deadline,
// median + k·MAD of the arrival delays this node observed, bounded by the network spec's
// minimum and maximum, and in any case at the maximum, so a slow or silent peer never holds
// a round past it.
package core
