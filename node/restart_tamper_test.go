package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/lowband/lowband/configs"
	"github.com/lowband/lowband/node/store"
)

// copyHome copies a stopped node's home directory, its checkpoints directory with it.
func copyHome(t *testing.T, h configs.Home) configs.Home {
	t.Helper()
	dst := configs.Home{Dir: filepath.Join(t.TempDir(), "home")}
	copyDir(t, h.Dir, dst.Dir)
	return dst
}

// copyDir copies the regular files of src and its subdirectories to dst, each readable by
// its owner only (as a home's identity key must be).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		from, to := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		switch {
		case e.IsDir():
			copyDir(t, from, to)
		case e.Type().IsRegular():
			data, err := os.ReadFile(from)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(to, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// replayedRound makes a stopped node's home replay from its oldest kept checkpoint (the
// later ones are dropped) and returns the first round that replay covers: 1 without a
// checkpoint (round 0 has no shards when the node joined it late), else the checkpoint's
// round.
func replayedRound(t *testing.T, h configs.Home) uint64 {
	t.Helper()
	st, err := store.Open(h.StorePath(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	kept, err := st.Checkpoints()
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) == 0 {
		return 1
	}
	if err := st.DropCheckpointsAfter(kept[0].Round); err != nil {
		t.Fatal(err)
	}
	led, err := st.State()
	if err != nil {
		t.Fatal(err)
	}
	if kept[0].Round >= led.Round {
		t.Fatalf("the oldest kept checkpoint is of round %d, the ledger at %d: nothing to replay", kept[0].Round, led.Round)
	}
	return kept[0].Round
}

// tamper edits the bucket of a store file in place: edit gets each key and value of the
// round's entries (a round key prefix) and returns the new value (nil: delete the entry).
func tamper(t *testing.T, path, bucket string, round uint64, edit func(k, v []byte) []byte) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	prefix := []byte{0, 0, 0, 0, 0, 0, 0, byte(round)}
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		type kv struct{ k, v []byte }
		var todo []kv
		c := b.Cursor()
		for k, v := c.Seek(prefix); k != nil && strings.HasPrefix(string(k), string(prefix)); k, v = c.Next() {
			todo = append(todo, kv{append([]byte(nil), k...), edit(k, append([]byte(nil), v...))})
		}
		if len(todo) == 0 {
			t.Fatalf("no entry of round %d in %s", round, bucket)
		}
		for _, e := range todo[:1] { // the first entry only
			if e.v == nil {
				if err := b.Delete(e.k); err != nil {
					return err
				}
			} else if err := b.Put(e.k, e.v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// flipMiddle flips a byte in the middle of a value: in a shard, of its payload.
func flipMiddle(_, v []byte) []byte {
	v[len(v)/2] ^= 0x55
	return v
}

// checkTamperedHomesRefused: copies of a stopped node's home with one shard or record of
// round 1 changed on disk are each refused at start with an error naming round 1, never a
// panic.
func checkTamperedHomesRefused(t *testing.T, ctx context.Context, h configs.Home, cfg *configs.Config, s *configs.Spec) {
	t.Helper()
	for name, edit := range map[string]struct {
		bucket string
		edit   func(k, v []byte) []byte
	}{
		"shard byte flipped":  {"shards", flipMiddle},
		"shard missing":       {"shards", func(_, _ []byte) []byte { return nil }},
		"shard oversized":     {"shards", func(_, _ []byte) []byte { return make([]byte, store.MaxShardBytes+1) }},
		"record byte flipped": {"records", flipMiddle},
	} {
		home := copyHome(t, h)
		r := replayedRound(t, home)
		tamper(t, home.StorePath(), edit.bucket, r, edit.edit)
		n, err := New(ctx, Options{Home: home, Config: cfg, Spec: s, Logger: slog.New(slog.DiscardHandler)})
		if err == nil {
			n.Close()
			t.Errorf("%s: the node started", name)
			continue
		}
		var re *ReplayError
		if !strings.Contains(err.Error(), fmt.Sprintf("round %d", r)) || !errors.As(err, &re) && !errors.Is(err, store.ErrCorrupt) {
			t.Errorf("%s: %v, want an error naming round %d", name, err, r)
		}
		t.Logf("%s: %v", name, err)
	}
}
