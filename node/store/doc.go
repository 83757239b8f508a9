// Package store persists the stake ledger, its commit records and the evidence they
// include in an embedded transactional store (go.etcd.io/bbolt).
//
// Each committed round is one bbolt transaction: the record, its evidence, the events it
// caused, the new ledger state and the signed shards of the contributions it included are
// written together or not at all, and the transaction
// is synced before Commit returns. A process killed at any moment (kill -9) reopens with
// the ledger of the last round whose Commit returned, or a later one, never a round half
// applied.
//
// Layout (one bucket each):
//
//	meta      "state" -> the ledger state (incentives.State, canonical CBOR)
//	          "genesis" -> the genesis root (32 bytes), "version" -> layout version
//	records   round (8 bytes, big-endian) -> the commit record
//	evidence  evidence ID (32 bytes) -> the evidence
//	history   peer length (2 bytes), peer, round (8 bytes), sequence (4 bytes) -> an
//	          incentives.Event; the length keeps one peer's events out of another's
//	shards    round (8 bytes), peer length (2 bytes), peer, index (4 bytes) -> a signed
//	          shard (verify.Shard, canonical CBOR) the round's record includes; read back
//	          by round (Shards) to replay the round, dropped before a checkpoint
//	          (PruneShards)
//	local     "state" -> first open round (8 bytes), the node's local state blob
//	          (PutLocal), while no checkpoint keeps it
//	checkpoints        round -> CheckpointInfo (manifest, ID, root, chunk hashes)
//	checkpoint-local   round -> the node's local state kept with that checkpoint
//	checkpoint-ids     manifest ID -> round; checkpoint-roots: state root -> round
//	checkpoint-chunks  SHA-256 -> chunk, shared by the checkpoints that hold it
//	states    round (8 bytes) -> the ledger state that round started from, for the last
//	          KeptStates rounds and the head
//	round_events  round (8 bytes), sequence (4 bytes) -> the history key of an event of
//	          that round
//
// PutCheckpoint writes a checkpoint and drops all but the last N (and the chunks only they
// used) in one transaction; DropCheckpointsAfter drops those that follow rounds closed
// again (dropCheckpointsAfter inside a reorg's transaction).
//
// Reorg closes the last rounds again (a repair, when the node's rounds differ from the
// canonical ones): in one transaction it drops the replaced rounds' records, the evidence
// they included, their events, their stored shards and the checkpoints that followed
// them, restores the ledger state the first of them started from, and commits the new
// rounds with their shards. A kill during it leaves the old rounds or the new ones, never
// a mix.
//
// A Store is safe for concurrent use. Open takes the file's lock: a second process opening
// the same file waits up to the timeout and then fails with ErrLocked.
package store
