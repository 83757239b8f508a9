package node

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node/store"
)

// lastShardRound is the last round of a home whose shards are stored.
func lastShardRound(t *testing.T, h configs.Home, head uint64) uint64 {
	t.Helper()
	s, err := store.Open(h.StorePath(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for r := head; r > 0; r-- {
		if sh, err := s.Shards(r - 1); err == nil && len(sh) > 0 {
			return r - 1
		}
	}
	t.Fatal("no round with shards stored")
	return 0
}

// flipChunk flips a byte in the middle of the first chunk of the checkpoint of round r,
// in the checkpoint's file.
func flipChunk(t *testing.T, path string, r uint64) {
	t.Helper()
	s, err := store.Open(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.CheckpointAt(r)
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !info.Files {
		t.Fatalf("the checkpoint of round %d is not kept in files", r)
	}
	name := filepath.Join(path+store.CheckpointsSuffix, hex.EncodeToString(info.ID[:])+".ckpt")
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	data[min(len(data), int(info.ChunkSize))/2] ^= 0x40
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestAuditHomeOfASwarmNodePassesAndNamesTheTamperedRound: the home of a node that ran a
// few rounds in a swarm of three audits clean from genesis (its own signatures checked,
// the rounds whose shards it keeps closed again, its checkpoints checked); copies of it
// with one byte changed in one record, signed record, shard or checkpoint chunk fail,
// naming the round and why.
func TestAuditHomeOfASwarmNodePassesAndNamesTheTamperedRound(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	rs := startRestartSwarm(t, ctx, 3)
	last := len(rs.nodes) - 1
	closedRounds(t, ctx, rs.nodes[last], 5)
	rs.stop()
	h := rs.homes[last]
	rep, err := AuditHome(h, rs.spec)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK || rep.Start != "genesis" || uint64(len(rep.Rounds)) != rep.Head || rep.Head < 5 {
		t.Fatalf("audit of the home: ok %v from %s, %d rounds of %d, failed %+v", rep.OK, rep.Start, len(rep.Rounds), rep.Head, rep.Failed)
	}
	var full, ckpts int
	for _, l := range rep.Rounds {
		if l.Signature != "ok" {
			t.Errorf("round %d: signature %q", l.Round, l.Signature)
		}
		if l.Checked == CheckedFull {
			full++
		}
		if l.Checkpoint {
			ckpts++
		}
	}
	if full == 0 || ckpts == 0 {
		t.Fatalf("%d rounds closed again from shards, %d checkpoints checked: want some of each", full, ckpts)
	}
	shardRound := lastShardRound(t, h, rep.Head)
	var ckptRound uint64
	for _, l := range rep.Rounds {
		if l.Checkpoint && ckptRound == 0 {
			ckptRound = l.Round + 1
		}
	}
	for _, c := range []struct {
		name, bucket string
		round        uint64
		reason       string
	}{
		{"record", "records", 1, ""},
		{"signed record", "signed-records", 1, "signed record"},
		{"shard", "shards", shardRound, "shard"},
		{"checkpoint chunk", "checkpoint-chunks", ckptRound, "checkpoint"},
	} {
		home := copyHome(t, h)
		if c.bucket == "checkpoint-chunks" {
			flipChunk(t, home.StorePath(), c.round)
		} else {
			tamper(t, home.StorePath(), c.bucket, c.round, flipMiddle)
		}
		rep, err := AuditHome(home, rs.spec)
		if err != nil {
			t.Fatalf("%s changed: %v", c.name, err)
		}
		if rep.OK || rep.Failed == nil || rep.Failed.Round != c.round || !strings.Contains(rep.Failed.Reason, c.reason) {
			t.Errorf("%s of round %d changed: ok %v, failed %+v", c.name, c.round, rep.OK, rep.Failed)
			continue
		}
		t.Logf("%s of round %d changed: %v", c.name, c.round, rep.Failed)
	}
}
