package compress

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

func shardSample(t testing.TB) (*Message, map[string][]int) {
	rng := newRand(11)
	e := mustEncoder(t, Config{RankMin: 32, RankMax: 32, MinLowRank: 64, MaxShardBytes: MinShardBytes})
	ts := []Tensor{
		randTensor(rng, "a", 1, 7),
		randTensor(rng, "emb", 1, 600, 64), // P alone is 9600 bytes: split by rows
		randTensor(rng, "big", 1, 20000),   // 20000 int8 bytes: split by elements
		randTensor(rng, "c", 1, 40, 3),
		randTensor(rng, "d", 1, 100, 100),
	}
	shapes := map[string][]int{}
	for _, tt := range ts {
		shapes[tt.Name] = tt.Shape
	}
	return mustEncode(t, e, ts), shapes
}

func TestShardsRespectCapAndJoin(t *testing.T) {
	m, shapes := shardSample(t)
	whole := mustBytes(t, m)
	shards, err := m.Shards()
	if err != nil {
		t.Fatal(err)
	}
	if len(shards) < 8 {
		t.Fatalf("%d shards for %d bytes under a %d-byte cap", len(shards), len(whole), MinShardBytes)
	}
	full := mustDecode(t, m)
	sum := map[string][]float64{}
	var parts []*Message
	for i, s := range shards {
		if len(s.Data) > MinShardBytes {
			t.Fatalf("shard %d is %d bytes > cap %d", i, len(s.Data), MinShardBytes)
		}
		if s.Index != i || s.Count != len(shards) || !s.CID.Equals(CIDOf(s.Data)) {
			t.Fatalf("shard %d: index %d count %d cid %v", i, s.Index, s.Count, s.CID)
		}
		if err := CheckShard(s.Data, shapes, math.Inf(1), DefaultLimits); err != nil {
			t.Fatalf("shard %d fails its content check: %v", i, err)
		}
		p, err := DecodeShard(s.Data, DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, p)
		for _, tt := range mustDecode(t, p) { // each shard decodes alone; uncovered parts are 0
			if sum[tt.Name] == nil {
				sum[tt.Name] = make([]float64, len(tt.Data))
			}
			for j, v := range tt.Data {
				sum[tt.Name][j] += v
			}
		}
	}
	for _, tt := range full {
		for j, v := range tt.Data {
			if sum[tt.Name][j] != v {
				t.Fatalf("%s[%d]: shards sum to %v, whole decodes to %v", tt.Name, j, sum[tt.Name][j], v)
			}
		}
	}
	rng := newRand(12)
	for trial := 0; trial < 5; trial++ {
		rng.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })
		joined, err := Join(parts)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(mustBytes(t, joined), whole) {
			t.Fatal("Join of the shards does not re-encode to the original message")
		}
	}
}

func TestShardsDistinctCIDs(t *testing.T) {
	m, _ := shardSample(t)
	shards, err := m.ShardsOf(16 << 10)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range shards {
		if len(s.Data) > 16<<10 || seen[s.CID.KeyString()] {
			t.Fatalf("shard %d: %d bytes, cid seen before: %v", s.Index, len(s.Data), seen[s.CID.KeyString()])
		}
		seen[s.CID.KeyString()] = true
	}
	if c := CIDOf([]byte("x")); c.Prefix().Codec != 0x55 || c.Prefix().MhType != 0x12 || c.Version() != 1 {
		t.Fatalf("CID prefix %+v", c.Prefix())
	}
	if _, err := m.ShardsOf(HardMaxShardBytes + 1); err == nil {
		t.Fatal("shard cap above the hard maximum accepted")
	}
}

func TestJoinRejectsIncompleteSets(t *testing.T) {
	m, _ := shardSample(t)
	shards, _ := m.Shards()
	var parts []*Message
	for _, s := range shards {
		p, err := DecodeShard(s.Data, DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, p)
	}
	other := sample(t)
	cases := map[string][]*Message{
		"none":      nil,
		"missing":   parts[1:],
		"duplicate": append(append([]*Message(nil), parts[:len(parts)-1]...), parts[0]),
		"foreign":   append(append([]*Message(nil), parts[:len(parts)-1]...), other),
		"nil":       append(append([]*Message(nil), parts[:len(parts)-1]...), nil),
	}
	for name, ps := range cases {
		if _, err := Join(ps); !errors.Is(err, ErrShards) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

func TestShardTooBigToSplit(t *testing.T) {
	rng := newRand(13)
	// Q alone (5000 cols × rank 8 in int4, 20 KB) cannot fit a 4 KiB shard.
	e := mustEncoder(t, Config{RankMin: 8, RankMax: 8, MinLowRank: 64, MaxShardBytes: MinShardBytes})
	m := mustEncode(t, e, []Tensor{randTensor(rng, "w", 1, 8, 5000)})
	if _, err := m.Shards(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v", err)
	}
}
