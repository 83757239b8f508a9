// Package incentives is lowband's stake ledger: a pure state machine that every honest node
// derives identically from committed round records and self-verifying evidence.
//
// # Objects
//
//   - Params and Genesis: the rules and initial stakes, from the network spec (the node
//     converts configs.IncentivesSpec; this package does not import configs).
//   - Evidence: proof of one offence, checkable by anyone from signed data alone:
//     equivocation (two different shard headers for the same peer, round and index, each
//     signed by a key that the peer attested in an identity-signed bundle: the same key or
//     two; a header signed twice is one header), invalid attestation (a shard header signed under a bundle that
//     fails the policy in a provable way, see ProvableClasses) and invalid content (a signed
//     shard, attested by a valid bundle, whose payload fails the content checks) and
//     record equivocation (one signer's identity signatures over two different record
//     digests for one round: a vote cast twice, proved in a few hundred bytes whatever the
//     records' size; it takes the equivocation penalty). Its ID is the hash of its
//     canonical encoding.
//   - SignedRecord: a commit record as a node publishes it, signed by its identity over a
//     domain tag, network, run, signer, round and the SHA-256 of the record bytes
//     (VoteMessage), so that two of its signatures prove a double vote on their own.
//   - Record: the commit record of one closed round: round, previous root, inclusion list
//     (contributions and evidence), model root, new root. Records chain by root. A
//     contribution the round's aggregation rule left out whole is listed with Dropped set:
//     it was an input of the rule, and earns nothing.
//   - State: the ledger. State.Root hashes its one canonical encoding.
//
// # Usage
//
// A node closes a round with State.Build, which checks the evidence it holds, leaves out
// what proves nothing or proves an offence already penalised, includes what fits the
// record (MaxEvidencePerRecord items, MaxRecordSize bytes; each peer's first offence before
// anyone's second, the larger slash first, then the oldest offence first), and returns
// the canonical record, the next state and the evidence deferred to later rounds (what did
// not fit, and evidence of rounds not closed yet).
// Build never fails because of evidence, and every record it writes decodes. A node that
// receives or replays a record calls State.Apply, which refuses the whole record if any
// evidence in it is bad, out of the window, or if the record's roots do not match. Both
// return new values and never modify the receiver; the caller persists the record and the
// state together (node/store does it in one transaction).
//
//	st, _ := incentives.NewState(params, genesis)
//	closed, err := st.Build(contribs, evidence, modelRoot, checker)
//	// persist closed.Record and closed.State atomically, publish the record,
//	// then st = closed.State and keep closed.Deferred for the next round
//
// # Rules
//
// Within a round: jails that end are released; evidence is penalised in ID order; then
// included contributions are rewarded in peer order, except those marked Dropped
// (EventFiltered): the ledger takes the flags as the record says, as it takes the model
// root; whoever closes the round from its contributions checks both. A penalty takes from stake first, then
// from balance, and jails the peer for Params.JailRounds rounds after the record's round: a
// jailed peer earns nothing and has no voting power. A contribution of a peer whose stake is
// at least MinStake (and positive) earns Reward; any other peer earns
// Reward*UnstakedWeightPPM/10^6, so newcomers can join and earn before they hold stake.
//
// The same offence counts once. Offences are keyed (kind, peer, round, index) — with index 0
// for invalid attestation, whose offence is the bundle, not each shard — so two different
// proofs of one offence, in one record or in two, penalise once. The ledger remembers
// penalised offences for as long as evidence about them can still be included (the
// evidence window), which bounds its memory.
//
// Bounded state: the ledger holds at most MaxAccounts accounts and remembers at most
// MaxEvidencePerRecord offences per round of the window, so its encoding stays under
// MaxStateSize whatever peers send. When a record leaves more than MaxAccounts accounts,
// unstaked accounts are dropped, each with an EventDrop: first those the record does not
// reward, then its contributors, each group smallest balance first (then fewest
// contributions, then by peer ID), so a peer contributing every round keeps its account.
// A dropped account loses its balance, its counts of contributions and offences, and its
// jail (if it contributes again it starts afresh, as a new peer): an unstaked peer that
// stops contributing can be pushed out by fresh identities. Accounts holding stake are
// never dropped, and a dropped peer's penalised offences stay remembered, so old evidence
// cannot penalise it again.
//
// Order independence: Apply canonicalises the record (contributions by peer, evidence by
// ID, duplicates dropped) before anything is applied, so the same records give the same
// bytes whatever order evidence arrived in.
//
// # Purity
//
// The package reads no clock, no files and no network. Evidence checks call the hooks of
// Checker (bundle verification and the content check), which the node sets; they must be
// deterministic for the ledger to be. Certificates are judged at Checker.EpochTime of the
// bundle's epoch, a function of the network spec; without it no evidence is checked.
//
// Evidence against a peer holds only for bundles that the peer's libp2p identity key
// signed (verify checks that signature), so nobody can wrap a report, however genuine,
// in a bundle that names someone else.
package incentives
