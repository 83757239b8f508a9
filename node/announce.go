package node

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/verify"
)

// The shards topic carries announcements: a signed shard without its payload (version,
// the signed header with its payload CID, the signature). The signature is the shard's
// own, so whatever it proves (equivocation, a shard under an invalid bundle) it proves
// from the announcement alone. A node that passes an announcement on holds the payload:
// its validator fetches the shard by payload CID from the neighbour that forwarded the
// announcement (who holds it for the same reason, or signed it) and passes it only once
// the shard passed every check a gossiped shard passes. So each payload crosses to each
// node about once, while the announcements (a few hundred bytes) take gossipsub's many
// paths. A full signed shard is still taken on the topic, checked as before.

// announceVersion is the announcement format this build reads and writes.
const announceVersion = 1

// maxAnnouncement bounds an announcement's encoding: three IDs at their cap, the bundle
// hash, a CID, the signature and the framing.
const maxAnnouncement = 3*verify.MaxIDLen + 512

// cborMap3 is the first byte of a CBOR map of three pairs: an announcement. A signed
// shard is a map of four (verify.Shard).
const cborMap3 = 0xa3

// announcement is the shards topic's message.
type announcement struct {
	Version uint8              `cbor:"1,keyasint"`
	Header  verify.ShardHeader `cbor:"2,keyasint"`
	Sig     []byte             `cbor:"4,keyasint"`
}

var (
	announceEnc = detEncMode()
	announceDec = strictDecMode(4, 16)
)

// errAnnouncement wraps every refusal of decodeAnnouncement.
var errAnnouncement = errors.New("malformed announcement")

// announce returns the announcement of a signed shard.
func announce(s *verify.Shard) ([]byte, error) {
	if _, err := s.Header.SigningBytes(); err != nil {
		return nil, err
	}
	return announceEnc.Marshal(&announcement{Version: announceVersion, Header: s.Header, Sig: s.Sig})
}

// decodeAnnouncement decodes an announcement from a peer: size first, then the decoding
// (unknown fields refused), version, signature size and header (the checks a signed
// shard's header passes), and the encoding must be the canonical one, so that one
// announcement has one message ID.
func decodeAnnouncement(data []byte) (*announcement, error) {
	if len(data) > maxAnnouncement {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", errAnnouncement, len(data), maxAnnouncement)
	}
	var a announcement
	if err := announceDec.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("%w: %v", errAnnouncement, err)
	}
	switch {
	case a.Version != announceVersion:
		return nil, fmt.Errorf("%w: version %d, this build reads %d", errAnnouncement, a.Version, announceVersion)
	case len(a.Sig) != ed25519.SignatureSize:
		return nil, fmt.Errorf("%w: signature of %d bytes", errAnnouncement, len(a.Sig))
	}
	if _, err := a.Header.SigningBytes(); err != nil {
		return nil, fmt.Errorf("%w: %v", errAnnouncement, err)
	}
	again, err := announceEnc.Marshal(&a)
	if err != nil || !bytes.Equal(again, data) {
		return nil, fmt.Errorf("%w: not in canonical encoding", errAnnouncement)
	}
	return &a, nil
}

// shardsTopic is the shards topic's wire check: an announcement, or a signed shard.
func (w wire) shardsTopic(data []byte) (any, p2p.Result, string) {
	if len(data) == 0 || data[0] != cborMap3 {
		return w.shard(data)
	}
	if len(data) > maxAnnouncement {
		return nil, p2p.Reject, reasonSize
	}
	a, err := decodeAnnouncement(data)
	if err != nil {
		return nil, p2p.Reject, reasonDecode
	}
	return scoped(a)(w.scope(a.Header.Network, a.Header.Run))
}

// Payload fetches of announced shards and votes: at most maxPayloadFetchesPerPeer in
// flight to one peer (a further one waits for one of them to end), all of one
// announcement's fetches bounded by payloadFetchTimeout.
const (
	maxPayloadFetchesPerPeer = 8
	payloadFetchTimeout      = defaultFetchTimeout
)

// announcedShard is the shards topic's full check of an announcement: round window;
// bundle known (else fetched from the forwarder, waited for); verified for the round;
// header names its peer; signature by the attested key; then the payload, held or fetched
// (the forwarder first, then the signer when connected), which must hash to the announced
// CID; then the content checks and the loop, as a gossiped shard. The node's own
// announcements pass when it holds the shard (announceOwn put it there), unchecked as its
// own signed shards were.
func (f *fullChecks) announcedShard(ctx context.Context, fwd peer.ID, a *announcement) (p2p.Result, string) {
	if fwd == f.cfg.Self {
		if f.content.byPayload(a.Header.PayloadCID) == nil {
			return p2p.Ignore, reasonNotHeld
		}
		return p2p.Accept, reasonOK
	}
	if r, reason := window(*f.view.Load(), a.Header.Round); r != p2p.Accept {
		return r, reason
	}
	if !f.startWait(fwd) {
		return p2p.Ignore, reasonBusy
	}
	defer f.endWait(fwd)
	hb, ok := f.awaitBundle(ctx, [32]byte(a.Header.BundleHash), fwd)
	if !ok {
		return p2p.Ignore, reasonBundleUnknown
	}
	hs := &verify.Shard{Version: verify.ShardVersion, Header: a.Header, Sig: a.Sig}
	key, r, reason := f.attestedKey(hs, hb)
	if r != p2p.Accept {
		return r, reason
	}
	if err := f.checkHeaderSignature(hs, key); err != nil {
		return p2p.Reject, reasonSignature
	}
	if f.content.conflictKnown(hs) {
		return p2p.Ignore, reasonEquivocation
	}
	s, data, r, reason := f.payload(ctx, fwd, hs)
	if r != p2p.Accept {
		return r, reason
	}
	return f.checked(s, data, hb, false)
}

// awaitBundle returns the held bundle of hash h, fetching it from the forwarder when
// unknown (wantBundle) and waiting for that fetch or one already in flight; false when
// none arrives.
func (f *fullChecks) awaitBundle(ctx context.Context, h [32]byte, from peer.ID) (*heldBundle, bool) {
	if hb, ok := f.reg.get(h); ok {
		return hb, true
	}
	f.wantBundle(h, from)
	f.mu.Lock()
	fetched := f.pending[h]
	f.mu.Unlock()
	if fetched != nil {
		select {
		case <-fetched:
		case <-ctx.Done():
		}
	}
	return f.reg.get(h)
}

// payload returns the signed shard of hs (an announcement's header and signature) with its
// payload: from a held shard of the same payload CID, else fetched. A payload that does not
// hash to the CID, from the forwarder, is Reject (an honest forwarder holds what it
// passed on); none from anyone is Ignore (the loop fetches a slot still missing when its
// round is about to close).
func (f *fullChecks) payload(ctx context.Context, fwd peer.ID, hs *verify.Shard) (*verify.Shard, []byte, p2p.Result, string) {
	cid := hs.Header.PayloadCID
	if held := f.content.byPayload(cid); held != nil {
		if s, data, err := withPayloadOf(hs, held, f.cfg.Wire.maxPayload); err == nil {
			return s, data, p2p.Accept, reasonOK
		}
	}
	if f.cfg.Fetch == nil {
		return nil, nil, p2p.Ignore, reasonNotHeld
	}
	ctx, cancel := context.WithTimeout(ctx, payloadFetchTimeout)
	defer cancel()
	stop := context.AfterFunc(f.ctx, cancel)
	defer stop()
	sources := f.payloadSources(fwd, hs.Header.Peer)
	for _, p := range sources {
		data, err := f.fetchPayload(ctx, p, cid)
		if err != nil {
			continue
		}
		s, out, err := withPayloadOf(hs, data, f.cfg.Wire.maxPayload)
		if err == nil {
			return s, out, p2p.Accept, reasonOK
		}
		if p == fwd {
			return nil, nil, p2p.Reject, reasonPayload
		}
	}
	// Gossip will not deliver this announcement again (seen cache): the slot is fetched
	// off the validator from the signer and the topic's peers, as the loop fetches a slot
	// missing at a round's close. The header's signature was checked, so this is a slot
	// its signer did sign.
	peers := slices.Clone(sources)
	if f.cfg.Peers != nil {
		for _, p := range f.cfg.Peers() {
			if !slices.Contains(peers, p) {
				peers = append(peers, p)
			}
		}
	}
	f.wantShard(peers, slotOf(&hs.Header))
	return nil, nil, p2p.Ignore, reasonNotHeld
}

// payloadSources are the peers asked for an announced payload, in turn: the forwarder,
// then the signer when it is connected (its signature on the header was checked, so an
// announcement cannot make the node ask an honest signer for what it never signed).
func (f *fullChecks) payloadSources(fwd peer.ID, signer string) []peer.ID {
	out := []peer.ID{fwd}
	id, err := peer.Decode(signer)
	if err == nil && id != fwd && id != f.cfg.Self && f.cfg.Connected != nil && f.cfg.Connected(id) {
		out = append(out, id)
	}
	return out
}

// errPeerBusy: maxPayloadFetchesPerPeer fetches from that peer stayed in flight until the
// fetch's time was up.
var errPeerBusy = errors.New("payload fetches from the peer at their bound")

// fetchPayload asks p for the shard of payload CID cid, within p's bound of fetches in
// flight. The bytes are unchecked.
func (f *fullChecks) fetchPayload(ctx context.Context, p peer.ID, cid []byte) ([]byte, error) {
	if err := f.waitPayloadFetch(ctx, p); err != nil {
		return nil, err
	}
	defer f.endPayloadFetch(p)
	return f.cfg.Fetch.fetch(ctx, p, cidRequest(cid))
}

// waitPayloadFetch waits until fewer than maxPayloadFetchesPerPeer fetches to p are in
// flight and counts one more (startPayloadFetch), or ctx ends.
func (f *fullChecks) waitPayloadFetch(ctx context.Context, p peer.ID) error {
	for !f.startPayloadFetch(p) {
		select {
		case <-ctx.Done():
			return errPeerBusy
		case <-time.After(askWait):
		}
	}
	return nil
}

// maxWaitsPerForwarder bounds the announcements of one forwarder whose check is under
// way at once, past the cheap checks (it may wait for a bundle or a payload, up to the
// fetch timeout): gossipsub checks at most 1,024 messages of a topic at a time and drops
// the rest, marked seen, so a forwarder of forged or withheld announcements could otherwise
// hold every slot and keep the honest announcements from this node. Past it, Ignore busy.
const maxWaitsPerForwarder = 32

// startWait counts an announcement of fwd whose check may wait; false when
// maxWaitsPerForwarder are. endWait ends it.
func (f *fullChecks) startWait(fwd peer.ID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.waiting[fwd] >= maxWaitsPerForwarder {
		return false
	}
	f.waiting[fwd]++
	return true
}

func (f *fullChecks) endWait(fwd peer.ID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.waiting[fwd]--; f.waiting[fwd] <= 0 {
		delete(f.waiting, fwd)
	}
}

// startPayloadFetch counts a fetch of an announced shard or vote from p in flight; false
// when maxPayloadFetchesPerPeer are. endPayloadFetch ends it.
func (f *fullChecks) startPayloadFetch(p peer.ID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.payloads[p] >= maxPayloadFetchesPerPeer {
		return false
	}
	f.payloads[p]++
	return true
}

func (f *fullChecks) endPayloadFetch(p peer.ID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.payloads[p]--; f.payloads[p] <= 0 {
		delete(f.payloads, p)
	}
}

// withPayloadOf returns the signed shard of hs's header and signature with the payload of
// data, a signed shard's encoding (a fetch answer or a held shard), and its encoding. The
// payload must hash to hs's payload CID; data's header and signature are not used.
func withPayloadOf(hs *verify.Shard, data []byte, maxPayload int) (*verify.Shard, []byte, error) {
	got, err := verify.UnmarshalShard(data, maxPayload)
	if err != nil {
		return nil, nil, err
	}
	if !bytes.Equal(verify.PayloadCID(got.Payload), hs.Header.PayloadCID) {
		return nil, nil, verify.ErrPayloadMismatch
	}
	s := &verify.Shard{Version: verify.ShardVersion, Header: hs.Header, Payload: got.Payload, Sig: hs.Sig}
	out, err := s.Marshal()
	if err != nil {
		return nil, nil, err
	}
	return s, out, nil
}

// checkHeaderSignature checks a shard's header signature alone (no payload).
func (f *fullChecks) checkHeaderSignature(s *verify.Shard, key ed25519.PublicKey) error {
	defer f.spent.stop(f.spent.start())
	return verify.CheckHeaderSignature(&s.Header, s.Sig, key)
}

// announceOwn holds one of the node's own signed shards (or, for an adversary, one it
// made) to serve it, and returns its announcement to publish.
func (f *fullChecks) announceOwn(data []byte) ([]byte, error) {
	obj, r, reason := f.cfg.Wire.shard(data)
	if r != p2p.Accept {
		return nil, fmt.Errorf("own shard: %s %s", r, reason)
	}
	s := obj.(*verify.Shard)
	f.content.put(s, data)
	return announce(s)
}

// publish is the node's publish: its shards and votes go out as announcements, held to be
// served.
func (n *Node) publish(ctx context.Context, kind string, data []byte) error {
	var err error
	switch kind {
	case p2p.KindShards:
		data, err = n.checks.announceOwn(data)
	case p2p.KindRecords:
		data, err = n.checks.announceOwnVote(data)
	}
	if err != nil {
		return err
	}
	return n.host.Publish(ctx, kind, data)
}

// connected reports whether the node's host is connected to p.
func (n *Node) connected(p peer.ID) bool {
	_, ok := slices.BinarySearch(n.host.ConnectedPeers(), p)
	return ok
}
