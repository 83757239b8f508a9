package node

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/node/checkpoint"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/verify"
)

// The fetch protocol (p2p.FetchProtocol): one request per stream, a kind byte and a key,
// and one response, the object's bytes, empty when the peer does not hold it. Whatever a
// fetch returns goes through the same checks as gossip.
const (
	fetchBundle byte = 1 // key: a bundle's 32-byte hash
	// 2 was a shard by its payload CID alone, retired: several slots can hold one payload
	// (a peer sending the same update in two rounds, or a copy of another peer's).
	fetchShardSlot byte = 3 // key: round (8 bytes, big endian), index (4 bytes), peer ID (text)
	fetchManifest  byte = 4 // key: a checkpoint manifest's 32-byte ID
	fetchChunk     byte = 5 // key: a checkpoint chunk's 32-byte SHA-256
	fetchManifestR byte = 6 // key: a 32-byte state root: the manifest of its checkpoint
	// fetchCommitted: key: round (8 bytes, big endian; all ones: the last closed round):
	// the node's own signed record of that round as it committed it (repaired rounds
	// included), for late joiners.
	fetchCommitted byte = 7
	// fetchSignedRecord: key: round (8 bytes, big endian), signer's peer ID (text): the
	// signed commit record of that signer for that round.
	fetchSignedRecord byte = 8
	// 9 was a stored shard by round and payload CID, retired: a peer that copies another's
	// payload signs a second shard with that CID in the round (fetchStoredShard).
	// fetchCommittedSame: key: round (8 bytes, big endian; all ones: the last closed
	// round), a record digest (32 bytes, incentives.RecordDigest): fetchCommitted's
	// answer, except that when the record the node committed has that digest, the answer
	// is its signature alone (shortCommitted): the asker holds that record and rebuilds the
	// signed one (fromShort). A node comparing itself with its peers sends the digest of
	// its own record: peers that agree answer in 74 bytes instead of a whole record.
	fetchCommittedSame byte = 10
	// fetchRecordBody: key: round (8 bytes, big endian), a record digest (32 bytes,
	// incentives.RecordDigest): the record of that digest, as a vote reference
	// (incentives.VoteRef) names it. The round is the asker's hint; the answer does not
	// depend on it (a signer may name a record in a vote of another round, which would
	// otherwise keep the record from the honest votes naming it). The asker checks the
	// digest.
	fetchRecordBody byte = 11
	// fetchCommittedDigest: key: round (8 bytes, big endian; all ones: the last closed
	// round): the digest of the record the node committed for that round, with the
	// signature it committed (digestCommitted's form: its vote's, or the committed
	// record's of a round it repaired). A node comparing itself with its
	// peers (the head watch) needs their rounds and which records they committed, not the
	// records: an answer is 106 bytes where a whole record lists every contribution.
	fetchCommittedDigest byte = 12
	// fetchShardCID: key: round (8 bytes, big endian), the CID's length (1 byte), a binary
	// payload CID, the signer's peer ID (text): the shard of that round and signer whose
	// header names that payload, from the recent shards the node holds. A repair asks by
	// CID, not by slot: the record it follows names the version of the slot it wants.
	fetchShardCID byte = 13
	// fetchStoredShard: key: fetchShardCID's (round, CID length, CID, signer's peer ID): the
	// shard of that round and signer with that payload the node stored with a commit (kept
	// since its oldest checkpoint), for late joiners replaying the rounds after a checkpoint.
	fetchStoredShard byte = 14
)

// shortCommitted marks fetchCommittedSame's short answer: the marker, the signed record's
// version (1 byte), its round (8 bytes, big endian) and its signature. A signed record's
// encoding (a CBOR map) never starts with this byte.
const (
	shortCommitted    byte = 0x01
	shortCommittedLen      = 1 + 1 + 8 + ed25519.SignatureSize
)

// digestCommitted marks fetchCommittedDigest's answer: the marker, the signed record's
// version (1 byte: incentives.SignedRecordVersion for a vote,
// incentives.CommittedRecordVersion for a repaired round's record), its round (8 bytes,
// big endian), the record's digest (32 bytes) and the signature.
const (
	digestCommitted    byte = 0x02
	digestCommittedLen      = 1 + 1 + 8 + 32 + ed25519.SignatureSize
)

// headRound is the key of fetchCommitted that asks for the last closed round.
const headRound = ^uint64(0)

// Request bounds: a shard by CID is the longest.
const (
	maxFetchCID     = 64
	maxFetchRequest = 1 + 8 + 1 + maxFetchCID + verify.MaxIDLen
)

// ErrBadFetchRequest is wrapped by parseFetchRequest for a request it refuses.
var ErrBadFetchRequest = errors.New("malformed fetch request")

// errNotHeld: the peer answered that it does not hold the object.
var errNotHeld = errors.New("the peer does not hold it")

// fetchRequest is one decoded request: kind and the key of that kind.
type fetchRequest struct {
	kind byte
	hash [32]byte // fetchBundle, fetchManifest, fetchChunk, fetchManifestR
	cid  []byte   // fetchShardCID, fetchStoredShard
	slot slot     // fetchShardSlot; fetchShardCID, fetchSignedRecord: round and peer (the signer)
}

func bundleRequest(h [32]byte) fetchRequest { return fetchRequest{kind: fetchBundle, hash: h} }
func slotRequest(k slot) fetchRequest       { return fetchRequest{kind: fetchShardSlot, slot: k} }

// cidRequest asks for the shard of round and peer whose payload is cid.
func cidRequest(round uint64, peer string, cid []byte) fetchRequest {
	return fetchRequest{kind: fetchShardCID, slot: slot{round: round, peer: peer}, cid: cid}
}

func committedRequest(round uint64) fetchRequest {
	return fetchRequest{kind: fetchCommitted, slot: slot{round: round}}
}

func committedDigestRequest(round uint64) fetchRequest {
	return fetchRequest{kind: fetchCommittedDigest, slot: slot{round: round}}
}

func committedSameRequest(round uint64, digest [32]byte) fetchRequest {
	return fetchRequest{kind: fetchCommittedSame, slot: slot{round: round}, hash: digest}
}

func bodyRequest(round uint64, digest [32]byte) fetchRequest {
	return fetchRequest{kind: fetchRecordBody, slot: slot{round: round}, hash: digest}
}

func storedShardRequest(round uint64, peer string, cid []byte) fetchRequest {
	return fetchRequest{kind: fetchStoredShard, slot: slot{round: round, peer: peer}, cid: cid}
}

func recordRequest(round uint64, signer string) fetchRequest {
	return fetchRequest{kind: fetchSignedRecord, slot: slot{round: round, peer: signer}}
}

func (r fetchRequest) marshal() []byte {
	out := []byte{r.kind}
	switch r.kind {
	case fetchBundle, fetchManifest, fetchChunk, fetchManifestR:
		out = append(out, r.hash[:]...)
	case fetchShardCID, fetchStoredShard:
		out = binary.BigEndian.AppendUint64(out, r.slot.round)
		out = append(out, byte(len(r.cid)))
		out = append(out, r.cid...)
		out = append(out, r.slot.peer...)
	case fetchShardSlot:
		out = binary.BigEndian.AppendUint64(out, r.slot.round)
		out = binary.BigEndian.AppendUint32(out, r.slot.index)
		out = append(out, r.slot.peer...)
	case fetchSignedRecord:
		out = binary.BigEndian.AppendUint64(out, r.slot.round)
		out = append(out, r.slot.peer...)
	case fetchCommitted, fetchCommittedDigest:
		out = binary.BigEndian.AppendUint64(out, r.slot.round)
	case fetchCommittedSame, fetchRecordBody:
		out = binary.BigEndian.AppendUint64(out, r.slot.round)
		out = append(out, r.hash[:]...)
	}
	return out
}

// parseFetchRequest decodes a request from a peer, checking its length for the kind before
// anything else; a slot's peer ID must be canonical.
func parseFetchRequest(b []byte) (fetchRequest, error) {
	if len(b) < 1 || len(b) > maxFetchRequest {
		return fetchRequest{}, fmt.Errorf("%w: %d bytes", ErrBadFetchRequest, len(b))
	}
	r, key := fetchRequest{kind: b[0]}, b[1:]
	switch r.kind {
	case fetchBundle, fetchManifest, fetchChunk, fetchManifestR:
		if len(key) != len(r.hash) {
			return r, fmt.Errorf("%w: key of kind %d of %d bytes", ErrBadFetchRequest, r.kind, len(key))
		}
		copy(r.hash[:], key)
	case fetchShardCID, fetchStoredShard:
		if len(key) < 9 {
			return r, fmt.Errorf("%w: shard by CID key of %d bytes", ErrBadFetchRequest, len(key))
		}
		n := int(key[8])
		if n == 0 || n > maxFetchCID || len(key) <= 9+n {
			return r, fmt.Errorf("%w: CID of %d bytes in a key of %d", ErrBadFetchRequest, n, len(key))
		}
		r.slot = slot{round: binary.BigEndian.Uint64(key), peer: string(key[9+n:])}
		r.cid = append([]byte(nil), key[9:9+n]...)
		if err := verify.CheckPeerID(r.slot.peer); err != nil {
			return r, fmt.Errorf("%w: %v", ErrBadFetchRequest, err)
		}
	case fetchShardSlot:
		if len(key) <= 12 {
			return r, fmt.Errorf("%w: slot of %d bytes", ErrBadFetchRequest, len(key))
		}
		r.slot = slot{round: binary.BigEndian.Uint64(key), index: binary.BigEndian.Uint32(key[8:]), peer: string(key[12:])}
		if err := verify.CheckPeerID(r.slot.peer); err != nil {
			return r, fmt.Errorf("%w: %v", ErrBadFetchRequest, err)
		}
	case fetchSignedRecord:
		if len(key) <= 8 {
			return r, fmt.Errorf("%w: record key of %d bytes", ErrBadFetchRequest, len(key))
		}
		r.slot = slot{round: binary.BigEndian.Uint64(key), peer: string(key[8:])}
		if err := verify.CheckPeerID(r.slot.peer); err != nil {
			return r, fmt.Errorf("%w: %v", ErrBadFetchRequest, err)
		}
	case fetchCommitted, fetchCommittedDigest:
		if len(key) != 8 {
			return r, fmt.Errorf("%w: round of %d bytes", ErrBadFetchRequest, len(key))
		}
		r.slot = slot{round: binary.BigEndian.Uint64(key)}
	case fetchCommittedSame, fetchRecordBody:
		if len(key) != 8+len(r.hash) {
			return r, fmt.Errorf("%w: round and digest of %d bytes", ErrBadFetchRequest, len(key))
		}
		r.slot = slot{round: binary.BigEndian.Uint64(key)}
		copy(r.hash[:], key[8:])
	default:
		return r, fmt.Errorf("%w: kind %d", ErrBadFetchRequest, r.kind)
	}
	return r, nil
}

// fetchServer answers fetch requests from the bundle registry, the content store, the
// record book, the kept checkpoints and the committed rounds (nil: none).
type fetchServer struct {
	reg     *registry
	content *contentStore
	records *recordBook
	ckpts   checkpointSource
	rounds  roundServer
	limits  *fetchLimits   // per-peer request budget; nil: none
	wire    *p2p.WireStats // counts the bytes served by request kind; nil: none
}

// roundServer serves the node's committed rounds to late joiners (*store.Store through
// storedRounds). Safe for concurrent use; what it does not hold is nil.
type roundServer interface {
	committed(round uint64) []byte                      // signed record; headRound: the last closed round's
	shard(round uint64, peer string, cid []byte) []byte // the stored shard of round and peer with that payload CID
}

// checkpointSource is what serves checkpoints (*store.Store). Safe for concurrent use; an
// object it does not hold is nil.
type checkpointSource interface {
	ManifestByID(id [32]byte) []byte
	ManifestByRoot(root [32]byte) []byte
	Chunk(hash [32]byte) []byte
}

// newFetchServer returns the server; serve it with
// host.Handle(string(p2p.FetchProtocol(network)), maxFetchRequest, srv.handle).
func newFetchServer(reg *registry, content *contentStore, records *recordBook) *fetchServer {
	return &fetchServer{reg: reg, content: content, records: records}
}

// handle implements p2p.Handler: a malformed request resets the stream, an object the
// node does not hold gets an empty response.
func (s *fetchServer) handle(_ context.Context, from peer.ID, req []byte) ([]byte, error) {
	r, err := parseFetchRequest(req)
	if err != nil {
		return nil, err
	}
	if s.limits != nil && !s.limits.allow(from, r.kind) {
		return nil, errFetchRateLimited
	}
	out := s.answer(r)
	s.wire.Served(fetchKindNames[r.kind], len(out))
	return out, nil
}

// fetchKindNames names the request kinds in WireStats.
var fetchKindNames = map[byte]string{
	fetchBundle: "bundle", fetchShardCID: "shard by CID", fetchShardSlot: "shard by slot",
	fetchManifest: "manifest", fetchChunk: "chunk", fetchManifestR: "manifest by root",
	fetchCommitted: "committed record", fetchSignedRecord: "signed record", fetchStoredShard: "stored shard",
	fetchCommittedSame: "committed record or its signature", fetchRecordBody: "record by digest",
	fetchCommittedDigest: "committed record's digest",
}

// answer is what the node holds for r; nil when nothing.
func (s *fetchServer) answer(r fetchRequest) []byte {
	switch r.kind {
	case fetchBundle:
		return s.reg.bundle(r.hash)
	case fetchShardCID:
		_, _, data := s.content.held(r.slot.round, r.slot.peer, r.cid)
		return data
	case fetchManifest, fetchChunk, fetchManifestR:
		return s.checkpoint(r)
	case fetchSignedRecord:
		return s.records.get(recordKey{round: r.slot.round, signer: r.slot.peer})
	case fetchRecordBody:
		return s.records.body(r.hash) // whatever the round: the asker checks the digest, then each vote's round
	case fetchCommitted, fetchStoredShard, fetchCommittedSame, fetchCommittedDigest:
		if s.rounds == nil {
			return nil
		}
		switch r.kind {
		case fetchCommitted:
			return s.rounds.committed(r.slot.round)
		case fetchCommittedSame:
			return shortIfSame(s.rounds.committed(r.slot.round), r.hash)
		case fetchCommittedDigest:
			return digestOf(s.rounds.committed(r.slot.round))
		}
		return s.rounds.shard(r.slot.round, r.slot.peer, r.cid)
	default:
		return s.content.shard(r.slot)
	}
}

// checkpoint answers a request for a manifest or a chunk.
func (s *fetchServer) checkpoint(r fetchRequest) []byte {
	switch {
	case s.ckpts == nil:
		return nil
	case r.kind == fetchManifest:
		return s.ckpts.ManifestByID(r.hash)
	case r.kind == fetchManifestR:
		return s.ckpts.ManifestByRoot(r.hash)
	}
	return s.ckpts.Chunk(r.hash)
}

// requester sends one request on a stream protocol (p2p.Host).
type requester interface {
	Request(ctx context.Context, to peer.ID, proto string, req []byte, maxResp int) ([]byte, error)
}

var _ requester = (*p2p.Host)(nil)

// fetchClient asks one peer for one object, with a timeout.
type fetchClient struct {
	host     requester
	proto    string
	maxShard int // largest shard encoding: the shards topic's cap
	timeout  time.Duration
}

// defaultFetchTimeout bounds one fetch.
const defaultFetchTimeout = 10 * time.Second

// newFetchClient returns a client of the fetch protocol of network w over host.
func newFetchClient(host requester, network string, w wire) *fetchClient {
	return &fetchClient{host: host, proto: string(p2p.FetchProtocol(network)), maxShard: w.shardCap(), timeout: defaultFetchTimeout}
}

// fetch asks peer to for the object of r. The bytes are unchecked: the caller checks them
// as it checks gossip. errNotHeld: the peer answered that it has none.
func (c *fetchClient) fetch(ctx context.Context, to peer.ID, r fetchRequest) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	maxResp := c.maxShard
	switch r.kind {
	case fetchBundle:
		maxResp = verify.MaxBundleSize
	case fetchManifest, fetchManifestR:
		maxResp = checkpoint.MaxManifestSize
	case fetchChunk:
		maxResp = checkpoint.MaxChunkSize
	case fetchSignedRecord, fetchCommitted, fetchCommittedSame:
		maxResp = min(p2p.MaxMessageSize, incentives.MaxSignedRecordSize)
	case fetchCommittedDigest:
		maxResp = digestCommittedLen
	case fetchRecordBody:
		maxResp = incentives.MaxRecordSize
	}
	data, err := c.host.Request(ctx, to, c.proto, r.marshal(), maxResp)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		return nil, errNotHeld
	}
	return data, nil
}

// maxFetchesPerPeer bounds the bundle fetches in flight from one neighbour, so that one
// forwarding shards under bundles it never serves cannot take every fetch slot.
const maxFetchesPerPeer = 2

// wantBundle fetches a bundle from the neighbour that forwarded a shard naming it, off
// the validator's goroutine: at most one fetch per hash and maxFetchesPerPeer per
// neighbour at a time, and none when MaxAsync are in flight (a later shard naming it asks
// again). The stashed shards are checked when it arrives.
func (f *fullChecks) wantBundle(h [32]byte, from peer.ID) {
	if from == f.cfg.Self || f.cfg.Fetch == nil {
		return
	}
	f.mu.Lock()
	if f.pending[h] || f.fetching[from] >= maxFetchesPerPeer {
		f.mu.Unlock()
		return
	}
	f.pending[h] = true
	f.fetching[from]++
	f.mu.Unlock()
	done := func() {
		f.mu.Lock()
		delete(f.pending, h)
		if f.fetching[from]--; f.fetching[from] == 0 {
			delete(f.fetching, from)
		}
		f.mu.Unlock()
	}
	if !f.goAsync(func(ctx context.Context) {
		defer done()
		if err := f.fetchBundle(ctx, from, h); err != nil {
			f.cfg.Log.Debug("fetching bundle", "bundle", fmt.Sprintf("%x", h[:8]), "peer", from.ShortString(), "err", err)
		}
	}) {
		done()
	}
}

// fetchBundle asks from for the bundle of hash h and, if it is that bundle, checks and
// holds it as if it came by gossip (counted as the attest topic's), draining the stash.
func (f *fullChecks) fetchBundle(ctx context.Context, from peer.ID, h [32]byte) error {
	data, err := f.cfg.Fetch.fetch(ctx, from, bundleRequest(h))
	if err != nil {
		return err
	}
	obj, r, reason := f.cfg.Wire.bundle(data)
	if r == p2p.Accept && obj.(*verify.Bundle).Hash() != h {
		r, reason = p2p.Reject, reasonDecode // not what was asked for
	}
	if r == p2p.Accept {
		r, reason = f.addBundle(data)
	}
	f.cfg.Metrics.counted(p2p.KindAttest, r, reason)
	if r != p2p.Accept {
		return fmt.Errorf("fetched bundle: %s %s", r, reason)
	}
	return nil
}

// fetchWant asks peers in turn for the shard of slot k (one missing when a round is
// about to close) until one sends a shard that passes every check and reaches the loop,
// fetching its bundle from the same peer when unknown, or k's round closes. It blocks:
// the loop calls it on a goroutine of its own. Each answer is counted as the shards
// topic's.
func (f *fullChecks) fetchWant(ctx context.Context, peers []peer.ID, k slot) bool {
	if f.cfg.Fetch == nil {
		return false
	}
	for _, p := range peers {
		if ctx.Err() != nil || k.round < f.view.Load().NextClose {
			return false
		}
		if p == f.cfg.Self {
			continue
		}
		data, err := f.cfg.Fetch.fetch(ctx, p, slotRequest(k))
		if err != nil {
			continue
		}
		r, reason := f.fetchedShard(ctx, p, k, data)
		f.cfg.Metrics.counted(p2p.KindShards, r, reason)
		if r == p2p.Accept {
			return true
		}
	}
	return false
}

// wantShard fetches the shard of slot k from peers in turn (fetchWant) off the caller's
// goroutine, and reports false, fetching nothing, when MaxAsync such fetches are in
// flight. They have slots of their own: one peer that never answers holds each for the
// fetch timeout, and must not hold up bundle fetches and evidence too.
func (f *fullChecks) wantShard(peers []peer.ID, k slot) bool {
	return f.goIn(f.wants, func(ctx context.Context) { f.fetchWant(ctx, peers, k) })
}

// fetchedShard checks a shard that from sent for slot k.
func (f *fullChecks) fetchedShard(ctx context.Context, from peer.ID, k slot, data []byte) (p2p.Result, string) {
	obj, r, reason := f.cfg.Wire.shard(data)
	if r != p2p.Accept {
		return r, reason
	}
	s := obj.(*verify.Shard)
	if slotOf(&s.Header) != k {
		return p2p.Reject, reasonDecode // not what was asked for
	}
	h := [32]byte(s.Header.BundleHash)
	if _, ok := f.reg.get(h); !ok {
		_ = f.fetchBundle(ctx, from, h)
	}
	return f.recheck(data)
}

// shortIfSame is the answer to fetchCommittedSame: data, a committed signed record, whole,
// or shortCommitted's form when its record has the given digest.
func shortIfSame(data []byte, digest [32]byte) []byte {
	sr, _, err := incentives.DecodeSignedRecord(data)
	if err != nil || len(sr.Sig) != ed25519.SignatureSize || incentives.RecordDigest(sr.Record) != digest {
		return data
	}
	out := append(make([]byte, 0, shortCommittedLen), shortCommitted, sr.Version)
	out = binary.BigEndian.AppendUint64(out, sr.Round)
	return append(out, sr.Sig...)
}

// digestOf is the answer to fetchCommittedDigest: data, a committed signed record, in
// digestCommitted's form; nil when there is none.
func digestOf(data []byte) []byte {
	sr, _, err := incentives.DecodeSignedRecord(data)
	if err != nil || len(sr.Sig) != ed25519.SignatureSize {
		return nil
	}
	d := incentives.RecordDigest(sr.Record)
	out := append(make([]byte, 0, digestCommittedLen), digestCommitted, sr.Version)
	out = binary.BigEndian.AppendUint64(out, sr.Round)
	out = append(out, d[:]...)
	return append(out, sr.Sig...)
}

// headRef is a peer's committed record of a round named by its digest: what a look at
// the heads compares.
type headRef struct {
	from   peer.ID
	round  uint64
	digest [32]byte
}

// parseDigestAnswer checks an answer to fetchCommittedDigest from peer from: its form, and
// the signature of from, for network and run, over its round and digest under its
// version's domain (a vote's or a committed record's: incentives.VerifyRecordDigest).
func parseDigestAnswer(answer []byte, network, run string, from peer.ID) (headRef, error) {
	if len(answer) != digestCommittedLen || answer[0] != digestCommitted {
		return headRef{}, fmt.Errorf("%w: a committed digest answer of %d bytes", incentives.ErrMalformed, len(answer))
	}
	h := headRef{from: from, round: binary.BigEndian.Uint64(answer[2:10]), digest: [32]byte(answer[10:42])}
	if err := incentives.VerifyRecordDigest(answer[1], network, run, from.String(), h.round, h.digest, answer[42:]); err != nil {
		return headRef{}, err
	}
	return h, nil
}

// refOf is a whole committed record's headRef.
func refOf(h peerHead) headRef {
	return headRef{from: h.from, round: h.rec.Round, digest: incentives.RecordDigest(h.rec.Marshal())}
}

// refsOf is refOf of each.
func refsOf(heads []peerHead) []headRef {
	out := make([]headRef, len(heads))
	for i, h := range heads {
		out[i] = refOf(h)
	}
	return out
}

// fromShort is the signed record an answer to fetchCommittedSame stands for: the answer
// itself when whole; for the short form, own (the asker's record of the digest it sent)
// with the answer's version, round and signature, signed by signer; nil for a short form
// of the wrong length or with no own record. Unchecked: the caller checks the result as
// any committed record, signature first.
func fromShort(answer []byte, own *incentives.SignedRecord, signer string) []byte {
	if len(answer) == 0 || answer[0] != shortCommitted {
		return answer
	}
	if len(answer) != shortCommittedLen || own == nil {
		return nil
	}
	sr := &incentives.SignedRecord{Version: answer[1], Network: own.Network, Run: own.Run, Signer: signer,
		Record: own.Record, Round: binary.BigEndian.Uint64(answer[2:10]), Sig: bytes.Clone(answer[10:])}
	return sr.Marshal()
}
