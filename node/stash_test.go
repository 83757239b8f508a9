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
				s.Put(p.key, p.round, []byte(p.data))
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
	s.Put("k", 1, d)
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
	s.Put("honest", 5, []byte("shard"))
	for i := range 10_000 {
		s.Put("flood", uint64(i), make([]byte, 1+i%300))
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
		s.Put(fmt.Sprint("key", i), uint64(i), make([]byte, 1+i%300))
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
