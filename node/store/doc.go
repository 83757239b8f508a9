// Package store persists the stake ledger, its commit records and the evidence they
// include in an embedded transactional store (go.etcd.io/bbolt).
//
// Each committed round is one bbolt transaction: the record, its evidence, the events it
// caused, the new ledger state, the signed shards of the contributions it included and
// the node's own signed record of the round (CommitSigned) are written together or not at
// all, and the transaction
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
//	signed-records  round (8 bytes) -> the node's own signed record of the round
//	          (incentives.SignedRecord) as it published it, for an offline audit
//	local     "state" -> first open round (8 bytes), the node's local state blob, as
//	          builds before the local file kept it (read while no file is there, dropped
//	          by the next PutLocal)
//	checkpoints        round -> CheckpointInfo (manifest, ID, root, chunk hashes)
//	checkpoint-local   round -> the node's local state kept with that checkpoint
//	checkpoint-ids     manifest ID -> round; checkpoint-roots: state root -> round
//	checkpoint-chunks  SHA-256 -> chunk, shared by the checkpoints that hold it
//	states    round (8 bytes) -> the ledger state that round started from, for the last
//	          KeptStates rounds and the head
//	round_events  round (8 bytes), sequence (4 bytes) -> the history key of an event of
//	          that round
//
// The node's local state blob (PutLocal, tens of MB on the default task) is kept in a file
// beside the store's (LocalSuffix): the first open round (8 bytes, big-endian), then the
// blob, replaced through a synced temporary file and a rename. In the bbolt file a value
// that large would be copied into bbolt's page buffers at each commit and grow the file
// by twice its size, which bbolt never gives back. Init of a new store drops a file left
// by a store removed before.
//
// bbolt maps the file with 1 GiB of address space from the start (initialMmap): a file
// that outgrows its map is mapped again, and bbolt then copies every value the write
// transaction holds to the heap first. Its free pages are kept in a map (FreelistMapType),
// which finds a run of pages for a large value without scanning a list. The file never
// shrinks: pages freed by pruned shards are reused by later writes, so it stays near its
// high-water mark (the shards since the oldest kept round, records and events).
//
// A checkpoint's bytes (its encoding, the chunks in order, and the local state kept with
// it) are two files named by its manifest's ID in the checkpoints directory beside the
// store's file (CheckpointsSuffix); bbolt keeps what names them. Kept in bbolt, each
// chunk of a new checkpoint landed in a B-tree leaf beside older ones, and every such
// leaf was copied to the heap and written again, reading the older chunks through the
// map: each checkpoint cost several times its size in allocations and resident memory.
// PutCheckpoint writes the files (synced, renamed into place), then in one transaction
// names the checkpoint and drops all but the last N; DropCheckpointsAfter drops those that
// follow rounds closed again (dropCheckpointsAfter inside a reorg's transaction). After
// each, and at Open, the files no kept checkpoint names are removed, so a kill leaves
// nothing behind for long. Checkpoints a build before the files kept in bbolt's buckets
// are still read from there.
//
// Reorg closes the last rounds again (a repair, when the node's rounds differ from the
// canonical ones): in one transaction it drops the replaced rounds' records, the evidence
// they included and their events, restores the ledger state the first of them started
// from, commits the new rounds with their shards and drops the checkpoints that followed
// the replaced rounds. A kill during it leaves the old rounds or the new ones,
// never a mix.
//
// ExportRecords (with the signed records) and ExportCheckpoints write a run to files that
// OpenDir reads back for an audit (node.AuditDir).
//
// A Store is safe for concurrent use. Open takes the file's lock: a second process opening
// the same file waits up to the timeout and then fails with ErrLocked.
package store
