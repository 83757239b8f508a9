package node

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/libp2p/go-libp2p/core/peer"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/p2p"
	"github.com/lowband/lowband/verify"
)

// The records topic carries vote announcements: a signed record without its record (the
// signer, the round, the record's digest and the signature, which covers exactly those
// with the network and run: incentives.VoteMessage). A node passes one on once it holds
// the whole signed record and the record passed every check a gossiped one passes: it
// rebuilds it from a record of the same digest it holds (nodes that agree sign the same
// record, so most votes cost no fetch), else fetches it by digest from the forwarder, then
// from the connected signer. A whole signed record is still taken on the topic.

// voteAnnounceVersion is the vote announcement format this build reads and writes.
const voteAnnounceVersion = 1

// maxVoteAnnouncement bounds a vote announcement's encoding: a peer ID at its cap, the
// digest, the signature and the framing.
const maxVoteAnnouncement = verify.MaxIDLen + 256

// cborMap5 is the first byte of a CBOR map of five pairs: a vote announcement. A signed
// record is a map of seven.
const cborMap5 = 0xa5

// voteAnnouncement is the records topic's message. Network and run are the node's own:
// the signature covers them, so one of another network or run does not verify.
type voteAnnouncement struct {
	Version uint8    `cbor:"1,keyasint"`
	Signer  string   `cbor:"2,keyasint"`
	Round   uint64   `cbor:"3,keyasint"`
	Digest  [32]byte `cbor:"4,keyasint"`
	Sig     []byte   `cbor:"5,keyasint"`
}

// announceVote returns the announcement of a signed record, a vote.
func announceVote(sr *incentives.SignedRecord) ([]byte, error) {
	if !sr.IsVote() {
		return nil, errors.New("announcing a record that is no vote")
	}
	return announceEnc.Marshal(&voteAnnouncement{Version: voteAnnounceVersion, Signer: sr.Signer, Round: sr.Round,
		Digest: incentives.RecordDigest(sr.Record), Sig: sr.Sig})
}

// decodeVoteAnnouncement decodes a vote announcement from a peer: size first, then the
// decoding (unknown fields refused), version, signer's peer ID, signature size, and the
// canonical encoding.
func decodeVoteAnnouncement(data []byte) (*voteAnnouncement, error) {
	if len(data) > maxVoteAnnouncement {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", errAnnouncement, len(data), maxVoteAnnouncement)
	}
	var a voteAnnouncement
	if err := announceDec.Unmarshal(data, &a); err != nil {
		return nil, fmt.Errorf("%w: %v", errAnnouncement, err)
	}
	switch {
	case a.Version != voteAnnounceVersion:
		return nil, fmt.Errorf("%w: version %d, this build reads %d", errAnnouncement, a.Version, voteAnnounceVersion)
	case len(a.Sig) != verify.IdentitySigSize:
		return nil, fmt.Errorf("%w: signature of %d bytes", errAnnouncement, len(a.Sig))
	}
	if err := verify.CheckPeerID(a.Signer); err != nil {
		return nil, fmt.Errorf("%w: %v", errAnnouncement, err)
	}
	again, err := announceEnc.Marshal(&a)
	if err != nil || !bytes.Equal(again, data) {
		return nil, fmt.Errorf("%w: not in canonical encoding", errAnnouncement)
	}
	return &a, nil
}

// recordsTopic is the records topic's wire check: a vote announcement, or a signed record.
func (w wire) recordsTopic(data []byte) (any, p2p.Result, string) {
	if len(data) == 0 || data[0] != cborMap5 {
		return w.record(data)
	}
	if len(data) > maxVoteAnnouncement {
		return nil, p2p.Reject, reasonSize
	}
	a, err := decodeVoteAnnouncement(data)
	if err != nil {
		return nil, p2p.Reject, reasonDecode
	}
	return a, p2p.Accept, reasonOK
}

// verifyVote checks a vote announcement's signature: by the signer's identity key, over
// the vote message of this network and run.
func (f *fullChecks) verifyVote(a *voteAnnouncement) error {
	defer f.spent.stop(f.spent.start())
	_, pub, err := verify.ParsePeerID(a.Signer)
	if err != nil {
		return err
	}
	ok, err := pub.Verify(incentives.VoteMessage(f.cfg.Wire.network, f.cfg.Wire.run, a.Signer, a.Round, a.Digest), a.Sig)
	if err != nil || !ok {
		return incentives.ErrRecordSignature
	}
	return nil
}

// announcedVote is the records topic's full check of a vote announcement, cheapest
// first: round window; signer a voter (else Ignore: it is fetched when its signer's next
// record shows the gap); a third record of the signer for the round Ignore; the
// signature (on a verification slot); then the signed record, rebuilt from a held record
// of the digest or fetched, through every check of a gossiped record (recordCheck). The
// node's own announcements pass when it holds the record (announceOwnVote put it there).
func (f *fullChecks) announcedVote(ctx context.Context, fwd peer.ID, a *voteAnnouncement) (p2p.Result, string) {
	key := recordKey{round: a.Round, signer: a.Signer}
	if fwd == f.cfg.Self {
		if f.records.byDigest(key, a.Digest) == nil {
			return p2p.Ignore, reasonNotHeld
		}
		return p2p.Accept, reasonOK
	}
	v := f.view.Load()
	if r, reason := recordWindow(*v, a.Round); r != p2p.Accept {
		return r, reason
	}
	if !f.voter(v, a.Signer) {
		return p2p.Ignore, reasonUnstaked
	}
	if f.records.knownOther(key, a.Digest) {
		return p2p.Ignore, reasonSecondRecord
	}
	if !f.tryHeavy() {
		return p2p.Ignore, reasonBusy
	}
	err := f.verifyVote(a)
	f.releaseHeavy()
	if err != nil {
		return p2p.Reject, reasonSignature
	}
	if !f.startWait(fwd) {
		return p2p.Ignore, reasonBusy
	}
	defer f.endWait(fwd)
	data, r, reason := f.voteOf(ctx, fwd, a)
	if r != p2p.Accept {
		return r, reason
	}
	obj, r, reason := f.cfg.Wire.record(data)
	if r != p2p.Accept {
		return r, reason
	}
	return f.recordCheck(ctx, fwd, data, obj)
}

// voteOf returns the signed record a vote announcement announces: rebuilt from a held
// record of its digest, else fetched by digest from the forwarder, then the connected
// signer. A record from the forwarder that is not of the digest and round is Reject.
func (f *fullChecks) voteOf(ctx context.Context, fwd peer.ID, a *voteAnnouncement) ([]byte, p2p.Result, string) {
	if held := f.records.withDigest(a.Digest); held != nil {
		if data, err := f.rebuildVote(a, held); err == nil {
			return data, p2p.Accept, reasonOK
		}
	}
	if f.cfg.Fetch == nil {
		return nil, p2p.Ignore, reasonNotHeld
	}
	ctx, cancel := context.WithTimeout(ctx, payloadFetchTimeout)
	defer cancel()
	stop := context.AfterFunc(f.ctx, cancel)
	defer stop()
	for _, p := range f.payloadSources(fwd, a.Signer) {
		got, err := f.fetchVote(ctx, p, a)
		if err != nil {
			continue
		}
		data, err := f.rebuildVote(a, got)
		if err == nil {
			return data, p2p.Accept, reasonOK
		}
		if p == fwd {
			return nil, p2p.Reject, reasonPayload
		}
	}
	return nil, p2p.Ignore, reasonNotHeld
}

// fetchVote asks p for the signed record of a's signer, round and digest, within p's
// bound of fetches in flight. The bytes are unchecked.
func (f *fullChecks) fetchVote(ctx context.Context, p peer.ID, a *voteAnnouncement) ([]byte, error) {
	if err := f.waitPayloadFetch(ctx, p); err != nil {
		return nil, err
	}
	defer f.endPayloadFetch(p)
	return f.cfg.Fetch.fetch(ctx, p, digestRequest(a.Round, a.Digest, a.Signer))
}

// rebuildVote returns the signed record of a with the record of held, a signed record's
// encoding (of any signer) whose record must have a's digest and round.
func (f *fullChecks) rebuildVote(a *voteAnnouncement, held []byte) ([]byte, error) {
	sr, rec, err := incentives.DecodeSignedRecord(held)
	if err != nil {
		return nil, err
	}
	if incentives.RecordDigest(sr.Record) != a.Digest || rec.Round != a.Round {
		return nil, errors.New("not the announced record")
	}
	out := &incentives.SignedRecord{Version: incentives.SignedRecordVersion, Network: f.cfg.Wire.network, Run: f.cfg.Wire.run,
		Signer: a.Signer, Record: sr.Record, Sig: a.Sig, Round: a.Round}
	return out.Marshal(), nil
}

// announceOwnVote holds the node's own vote to serve it, and returns its announcement.
func (f *fullChecks) announceOwnVote(data []byte) ([]byte, error) {
	obj, r, reason := f.cfg.Wire.record(data)
	if r != p2p.Accept {
		return nil, fmt.Errorf("own record: %s %s", r, reason)
	}
	in := obj.(recordIn)
	f.records.put(recordKey{round: in.rec.Round, signer: in.sr.Signer}, sha256.Sum256(data), incentives.RecordDigest(in.sr.Record), data)
	return announceVote(in.sr)
}
