// Package checkpoint is the checkpoint object: the global state after closing a round (θ,
// the outer momentum and the ledger), its one canonical encoding, the root it is verified
// against, and its manifest, which cuts the encoding into content-addressed chunks for the
// fetch protocol. It does no I/O: bytes in, bytes out.
//
// A Checkpoint of round R holds the state after closing round R-1 (R is the first open
// round). Its Root is the NewRoot of the commit record of round R-1: StateRoot(R-1, the
// model root, the ledger root), where the ledger root is taken, as the ledger takes it,
// over the state with the head of the round before (Prev, the record's PrevRoot). A node
// learns that root from the records; a checkpoint whose bytes do not give it is refused.
//
// Serving and fetching:
//
//	m, chunks := Split(c, 0)     // the manifest and the chunks (sub-slices of c.Encode())
//	id := m.ID()                 // what the DHT announces
//	...
//	m, err := DecodeManifest(b, lim)         // a peer's manifest: sizes checked first
//	c, err := Assemble(m, chunks, want, lim) // every chunk checked, decoded, root checked
//
// Everything from a peer is bounded before it is allocated: a manifest by MaxManifestSize
// and MaxChunks, a checkpoint by Limits.MaxSize (θ_0's size twice, for θ and the momentum,
// plus incentives.MaxStateSize for the ledger), each chunk by the manifest's sizes.
package checkpoint
