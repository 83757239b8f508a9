package node

import (
	"fmt"
	"slices"
	"testing"
)

func TestStash(t *testing.T) {
	type put struct {
		key   string
		round uint64
		data  string
	}
	for _, c := range []struct {
		name   string
		cfg    StashConfig
		puts   []put
		expire uint64 // Expire(expire) after the puts, when not 0
		take   string
		want   []string // Take(take)
		left   int      // entries left after Take
	}{
		{name: "take returns a key's entries oldest first",
			cfg:  StashConfig{},
			puts: []put{{"a", 1, "a1"}, {"b", 1, "b1"}, {"a", 1, "a2"}},
			take: "a", want: []string{"a1", "a2"}, left: 1},
		{name: "take of an unknown key is empty",
			puts: []put{{"a", 1, "a1"}},
			take: "z", want: []string{}, left: 1},
		{name: "over the entry bound the oldest goes",
			cfg:  StashConfig{MaxEntries: 2},
			puts: []put{{"a", 1, "a1"}, {"b", 1, "b1"}, {"a", 1, "a2"}},
			take: "a", want: []string{"a2"}, left: 1},
		{name: "over the byte bound the oldest go",
			cfg:  StashConfig{MaxBytes: 5},
			puts: []put{{"a", 1, "aa"}, {"b", 1, "bb"}, {"a", 1, "ccc"}},
			take: "a", want: []string{"ccc"}, left: 1},
		{name: "data over the byte bound is refused",
			cfg:  StashConfig{MaxBytes: 2},
			puts: []put{{"a", 1, "a1"}, {"a", 1, "big"}},
			take: "a", want: []string{"a1"}, left: 0},
		{name: "over the per-key bound the key's oldest goes, not another key's",
			cfg:  StashConfig{PerKey: 2},
			puts: []put{{"b", 1, "b1"}, {"a", 1, "a1"}, {"a", 1, "a2"}, {"a", 1, "a3"}},
			take: "a", want: []string{"a2", "a3"}, left: 1},
		{name: "expiry drops earlier rounds only",
			puts:   []put{{"a", 1, "a1"}, {"a", 3, "a3"}, {"a", 2, "a2"}, {"b", 1, "b1"}},
			expire: 2,
			take:   "a", want: []string{"a3", "a2"}, left: 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := NewStash(c.cfg)
			for _, p := range c.puts {
				s.Put("n1", p.key, p.round, []byte(p.data))
			}
			if c.expire != 0 {
				s.Expire(c.expire)
			}
			got := []string{}
			for _, d := range s.Take(c.take) {
				got = append(got, string(d))
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("Take(%q) = %q, want %q", c.take, got, c.want)
			}
			if n, _ := s.Len(); n != c.left {
				t.Errorf("%d entries left, want %d", n, c.left)
			}
		})
	}
}

func TestStashCopiesData(t *testing.T) {
	s := NewStash(StashConfig{})
	d := []byte("abc")
	s.Put("n1", "k", 1, d)
	d[0] = 'x'
	if got := s.Take("k"); string(got[0]) != "abc" {
		t.Fatalf("stash kept the caller's slice: %q", got[0])
	}
}

// TestStashFloodStaysBounded floods a stash with messages naming one unknown key and
// with messages naming many keys: it never grows past its bounds, and one key never
// holds more than its share, so an honest key's entry put before the flood of one key
// survives it.
func TestStashFloodStaysBounded(t *testing.T) {
	cfg := StashConfig{MaxEntries: 100, MaxBytes: 10_000, PerKey: 10}
	s := NewStash(cfg)
	s.Put("n1", "honest", 5, []byte("shard"))
	for i := range 10_000 {
		s.Put("n1", "flood", uint64(i), make([]byte, 1+i%300))
		n, b := s.Len()
		if n > cfg.MaxEntries || b > cfg.MaxBytes {
			t.Fatalf("after %d puts: %d entries, %d bytes; bounds %d, %d", i+1, n, b, cfg.MaxEntries, cfg.MaxBytes)
		}
	}
	if got := len(s.byKey["flood"]); got != cfg.PerKey {
		t.Fatalf("the flooded key holds %d entries, want its bound %d", got, cfg.PerKey)
	}
	if got := s.Take("honest"); len(got) != 1 {
		t.Fatalf("one key's flood evicted another key's entry: %q", got)
	}
	for i := range 10_000 {
		s.Put("n1", fmt.Sprint("key", i), uint64(i), make([]byte, 1+i%300))
		if n, b := s.Len(); n > cfg.MaxEntries || b > cfg.MaxBytes {
			t.Fatalf("after %d puts of distinct keys: %d entries, %d bytes", i+1, n, b)
		}
	}
	if got := len(s.Take("flood")); got > cfg.PerKey {
		t.Fatalf("one key holds %d entries, per-key bound %d", got, cfg.PerKey)
	}
	if n := s.Expire(1 << 40); n == 0 {
		t.Fatal("expiry dropped nothing")
	}
	if n, b := s.Len(); n != 0 || b != 0 {
		t.Fatalf("after expiring every round: %d entries, %d bytes", n, b)
	}
	if len(s.byKey) != 0 {
		t.Fatalf("%d keys left in the index", len(s.byKey))
	}
}

// TestStashNotFlushedByJunkUnderFreshKeys: shards naming bundles nobody has cost nothing to
// make, so a neighbour can send any number under fresh keys. Charged to that neighbour,
// they displace only its own entries: an honest shard forwarded by another neighbour
// waits for its bundle, whether the flood is counted in entries or in bytes.
func TestStashNotFlushedByJunkUnderFreshKeys(t *testing.T) {
	for _, c := range []struct {
		name string
		junk []byte
	}{{"many small", []byte("x")}, {"large", make([]byte, 60<<10)}} {
		t.Run(c.name, func(t *testing.T) {
			s := NewStash(StashConfig{MaxEntries: 1024, MaxBytes: 1 << 20})
			s.Put("honest-neighbour", "honest-bundle", 1, []byte("shard"))
			for i := range 4096 {
				s.Put("junk-neighbour", fmt.Sprint("junk-", i), 1, c.junk)
			}
			if got := s.Take("honest-bundle"); len(got) != 1 {
				t.Fatalf("after 4096 junk messages under fresh keys from one neighbour, the honest shard is gone (%d kept)", len(got))
			}
			if n, b := s.Len(); n == 0 || n > 1024 || b > 1<<20 {
				t.Fatalf("%d entries, %d bytes: the junk neighbour should hold what is left, within bounds", n, b)
			}
		})
	}
}

// TestStashSharesFairlyBetweenNeighbours: with several neighbours flooding, each keeps
// about an equal share, and one that sends little keeps all of it.
func TestStashSharesFairlyBetweenNeighbours(t *testing.T) {
	s := NewStash(StashConfig{MaxEntries: 100})
	for i := range 3 {
		s.Put("quiet", fmt.Sprint("q", i), 1, []byte("shard"))
	}
	for i := range 1000 {
		for _, src := range []string{"flood-a", "flood-b", "flood-c"} {
			s.Put(src, fmt.Sprint(src, i), 1, []byte("junk"))
		}
	}
	counts := map[string]int{}
	for _, es := range s.bySource {
		counts[es[0].Value.(*stashEntry).source] = len(es)
	}
	if counts["quiet"] != 3 {
		t.Fatalf("the quiet neighbour keeps %d of its 3 entries: %v", counts["quiet"], counts)
	}
	for _, src := range []string{"flood-a", "flood-b", "flood-c"} {
		if c := counts[src]; c < 31 || c > 33 {
			t.Errorf("%s holds %d entries, want about a third of the 97 left: %v", src, c, counts)
		}
	}
}

// TestStashKeyNotFlushedByOneNeighbour: shards waiting on one bundle hash (which anyone
// can copy from an honest shard) are not pushed out by one neighbour forwarding many
// shards naming that hash: over the per-key bound the key's heaviest source loses its
// oldest entry.
func TestStashKeyNotFlushedByOneNeighbour(t *testing.T) {
	s := NewStash(StashConfig{PerKey: 4})
	s.Put("honest", "k", 1, []byte("honest shard"))
	for i := range 10 {
		s.Put("flooder", "k", 1, []byte{byte(i)})
	}
	got := s.Take("k")
	if len(got) != 4 || !slices.ContainsFunc(got, func(d []byte) bool { return string(d) == "honest shard" }) {
		t.Fatalf("key holds %d entries, without the honest neighbour's", len(got))
	}
}
