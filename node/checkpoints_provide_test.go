package node

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/lowband/lowband/node/store"
)

// A node announces a checkpoint by root once, when it is made, not every kept one again
// with each new one (each announcement is a DHT lookup that every node of a small swarm
// answers); what failed is announced on the next try, and a cleared set announces all.
func TestNewCheckpointAnnouncedAlone(t *testing.T) {
	ctx := context.Background()
	info := func(r uint64) store.CheckpointInfo {
		return store.CheckpointInfo{Round: r, Root: [32]byte{byte(r)}, ID: [32]byte{0xff, byte(r)}}
	}
	var provided [][32]byte
	fail := -1 // the call that fails, counting from 0
	provide := func(_ context.Context, key [32]byte) error {
		if len(provided) == fail {
			fail = -1
			return errors.New("no peer took it")
		}
		provided = append(provided, key)
		return nil
	}
	keys := func(rs ...uint64) [][32]byte {
		var out [][32]byte
		for _, r := range rs {
			out = append(out, rootKey(info(r).Root))
		}
		return out
	}
	all := func([32]byte) bool { return true }
	announced := map[[32]byte]bool{}
	list := []store.CheckpointInfo{info(10), info(20), info(30)}
	if err := provideNew(ctx, list, announced, all, provide); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(provided, keys(10, 20, 30)) {
		t.Fatalf("at start: announced %x, want the roots of the three kept", provided)
	}
	provided = nil
	list = []store.CheckpointInfo{info(20), info(30), info(40)}
	if err := provideNew(ctx, list, announced, all, provide); err != nil || !slices.Equal(provided, keys(40)) {
		t.Fatalf("a new checkpoint: announced %x (%v), want only its root", provided, err)
	}
	provided, fail = nil, 1
	clear(announced)
	list = append(list, info(50))
	if err := provideNew(ctx, list, announced, all, provide); err == nil {
		t.Fatal("a failed announcement not reported")
	}
	if err := provideNew(ctx, list, announced, all, provide); err != nil || !slices.Equal(provided, keys(20, 30, 40, 50)) {
		t.Fatalf("all again, one failing on the way: announced %x (%v), want each kept root once", provided, err)
	}
	provided = nil
	clear(announced)
	not30 := func(root [32]byte) bool { return root != info(30).Root }
	if err := provideNew(ctx, list, announced, not30, provide); err != nil || !slices.Equal(provided, keys(20, 40, 50)) {
		t.Fatalf("with one not picked: announced %x (%v), want the others", provided, err)
	}
}

// Exactly ckptAnnouncers of a swarm's voters announce each checkpoint, a different few for
// each, and every voter of a swarm of at most ckptAnnouncers does.
func TestCheckpointAnnouncersAreAFewVoters(t *testing.T) {
	const voters, roots = 16, 400
	ids := make([]string, voters)
	for i := range ids {
		ids[i] = fmt.Sprintf("12D3KooWvoter%02d", i)
	}
	first := map[string]bool{}
	for r := range roots {
		root := sha256.Sum256([]byte(fmt.Sprint("root ", r)))
		n := 0
		for _, id := range ids {
			if announces(root, id, ids) {
				n++
				if n == 1 {
					first[id] = true
				}
			}
			if !announces(root, id, ids[:ckptAnnouncers]) && slices.Contains(ids[:ckptAnnouncers], id) {
				t.Fatalf("a voter of %d did not announce", ckptAnnouncers)
			}
		}
		if n != ckptAnnouncers {
			t.Fatalf("root %d: %d of %d voters announce, want %d", r, n, voters, ckptAnnouncers)
		}
	}
	if len(first) < voters/2 {
		t.Fatalf("the same few voters announce: only %d of %d ever first", len(first), voters)
	}
}
