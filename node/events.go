package node

import (
	"time"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/verify"
)

// shardIn is a shard that passed every check of its validator, on its way to the loop:
// the shard, its signer's marshalled bundle (evidence about the signer needs it) and
// when it arrived.
type shardIn struct {
	shard  *verify.Shard
	bundle []byte
	at     time.Time
	repair bool // fetched by CID for a repair of a closed round
}

// evidenceIn is evidence that decoded and that its validator re-checked.
type evidenceIn struct {
	ev *incentives.Evidence
}

// recordIn is a signed commit record that decoded and whose signature verified, on its
// way to the loop: the first record of its signer for its round this node got.
type recordIn struct {
	sr  *incentives.SignedRecord
	rec *incentives.Record
}
