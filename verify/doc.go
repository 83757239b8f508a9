// Package verify decides whether a peer's contribution comes from trusted code in a TEE.
//
// It is pure: no network, no files, no clock. Evidence, policies, seeds and the current time
// come in as arguments, and results are verdicts or typed errors (*Error with a stable Class).
//
// # Bundles
//
// A Bundle is a peer's attestation for one epoch: TEE kind, raw evidence (an AMD SEV-SNP
// report with its VCEK/VLEK certificate, an Intel TDX quote, or sim evidence), the ed25519
// ephemeral public key that signs the peer's shards, its peer ID, network, run and epoch. It
// has one canonical encoding (core deterministic CBOR); UnmarshalBundle refuses anything
// else, and Hash names a bundle by SHA-256 of that encoding.
//
// The TEE report's 64-byte user data must equal ReportData(network, run, peer ID, ephemeral
// key, epoch seed): SHA-512 over a domain tag and the length-prefixed fields. The epoch seed
// is EpochSeed(network, run, epoch), deterministic and therefore predictable (see its doc).
//
// A guest chooses its user data, so a report could bind any peer ID. The bundle therefore
// also carries IdentitySig: the peer's libp2p identity key (the Ed25519 key its peer ID
// embeds) signs IdentityMessage, a domain tag and the length-prefixed network, run, epoch,
// peer ID and ephemeral key. Only the peer itself can bind a key to its name. Peer IDs are
// accepted only in their canonical form (ParsePeerID).
//
// # Verification
//
// Verify checks, cheapest first: the bundle's fields; network and run against the policy; the
// epoch window (stale); the identity signature (identity_mismatch); the kind against the policy; the evidence chain offline against
// roots pinned by the verifier (go-sev-guest's embedded AMD roots, go-tdx-guest's embedded
// Intel root, or the network's sim roots), never roots sent by the peer; the policy
// (measurement allow-list, debug off, VMPL, minimum TCB); and last the binding, compared in
// constant time. Each failure is its own Class. The time at which certificates must be valid
// is an argument and must not be zero: crypto/x509, go-sev-guest and go-tdx-guest would read
// the clock instead. A Cache keeps verdicts by bundle hash, returned only for the policy that
// reached them and within its epoch window.
//
// Sim evidence is a SimReport signed by a sim root key the network spec names. It is
// accepted only when Policy.AllowSim is set, and its Verdict is always Insecure: callers log
// every such acceptance as insecure.
//
// # Shards
//
// A Shard is one signed piece of a compressed pseudo-gradient. SignShard fills the payload's
// content ID (CIDv1, raw, sha2-256) and signs a domain tag plus the header's canonical
// encoding, which names network, run, round, peer, index and the signer's bundle hash.
// CheckShardSignature checks it against the ephemeral key of a verified bundle;
// CheckShardSignatures and CheckHeaderSignatures check many at once.
//
// Shard signatures are Ed25519 verified under the ZIP-215 rules (curve25519-voi's
// VerifyOptionsZIP_215): the cofactored equation, small-order and non-canonical encodings of
// the key and R accepted, S required below the group order. Every node must reach the same
// verdict on every signature, because gossip acceptance and slashing evidence depend on it,
// and Ed25519 implementations differ on exactly these edge cases. ZIP-215 pins one answer,
// and it is the rule under which batch verification agrees with single verification: a
// batch check returns, item for item, what the single checks return (a failed batch falls
// back to single checks). Every signature crypto/ed25519 accepts is accepted; a few it
// refuses (a torsion component in R, a non-canonical R) are accepted too. Signing stays
// standard Ed25519.
//
// # Usage
//
//	v, hit, err := cache.VerifyCached(bundle, policy, seed[:], epoch, now)
//	if err != nil { reject: verify.ClassOf(err) says why }
//	if v.Insecure { log that a simulated TEE was accepted }
//	if err := verify.CheckShardSignature(shard, v.EphemeralKey); err != nil { reject }
package verify
