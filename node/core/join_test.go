package core_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/lowband/lowband/incentives"
	"github.com/lowband/lowband/incentives/incentivestest"
	"github.com/lowband/lowband/node/core"
	"github.com/lowband/lowband/training/compress"
	"github.com/lowband/lowband/verify"
)

// multiShard is a contribution of peer to round r in several shards (JoinShards reads
// headers and payloads only: signatures are the validators' business), and its message.
func multiShard(t *testing.T, peer string, r uint64) ([]*verify.Shard, *compress.Message) {
	t.Helper()
	enc, err := compress.NewEncoder(roundConfig(peer).Compress)
	if err != nil {
		t.Fatal(err)
	}
	var ts []compress.Tensor
	for i := range 6 {
		d := make([]float64, 1024)
		for j := range d {
			d[j] = float64((i*1024+j)%97) / 97
		}
		ts = append(ts, compress.Tensor{Name: fmt.Sprint("t", i), Shape: []int{1024}, Data: d})
	}
	msg, err := enc.Encode(ts)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := msg.Shards()
	if err != nil {
		t.Fatal(err)
	}
	var out []*verify.Shard
	for _, p := range parts {
		h := verify.ShardHeader{Network: testNetwork, Run: testRun, Round: r, Peer: peer, Index: uint32(p.Index), Count: uint32(p.Count), PayloadCID: verify.PayloadCID(p.Data)}
		out = append(out, &verify.Shard{Header: h, Payload: p.Data})
	}
	return out, msg
}

// JoinShards gives the contribution the peer sent, whatever the order of its shards, and
// refuses shards that are not exactly one contribution.
func TestJoinShardsAnyOrderAndRefusals(t *testing.T) {
	a, b := incentivestest.PeerID("a"), incentivestest.PeerID("b")
	shards, msg := multiShard(t, a, 0)
	if len(shards) < 2 {
		t.Fatalf("%d shards; the test needs two or more", len(shards))
	}
	wantBytes, _ := msg.Bytes()
	rev := slices.Clone(shards)
	slices.Reverse(rev)
	for _, in := range [][]*verify.Shard{shards, rev} {
		got, err := core.JoinShards(in, compress.DefaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := got.Msg.Bytes()
		if got.Round != 0 || got.Peer != a || got.Weight != 0 || !bytes.Equal(b, wantBytes) {
			t.Fatalf("joined round %d of %s weight %v, message equal %v", got.Round, got.Peer, got.Weight, bytes.Equal(b, wantBytes))
		}
	}
	others, _ := multiShard(t, b, 0)
	laters, _ := multiShard(t, a, 1)
	other, later := others[0], laters[0]
	junk := *shards[0]
	junk.Payload = []byte("junk")
	bad := map[string][]*verify.Shard{
		"none":       nil,
		"missing":    shards[1:],
		"twice":      append([]*verify.Shard{shards[0]}, shards[:len(shards)-1]...),
		"two peers":  append([]*verify.Shard{other}, shards[1:]...),
		"two rounds": append([]*verify.Shard{later}, shards[1:]...),
		"payload":    append([]*verify.Shard{&junk}, shards[1:]...),
		"nil":        append([]*verify.Shard{nil}, shards[1:]...),
	}
	for name, in := range bad {
		if _, err := core.JoinShards(in, compress.DefaultLimits); !errors.Is(err, core.ErrJoin) {
			t.Errorf("%s: %v, want ErrJoin", name, err)
		}
	}
}

// WeightsOf: staked 1, unstaked (or under the minimum stake) the unstaked weight, jailed
// left out; at an unstaked weight of 0 the unstaked are left out too.
func TestWeightsOfByLedger(t *testing.T) {
	p := ledgerParams()
	staked, small, free, jailed := incentivestest.PeerID("s"), incentivestest.PeerID("m"), incentivestest.PeerID("u"), incentivestest.PeerID("j")
	led, err := incentives.NewState(p, incentives.Genesis{Stakes: []incentives.Stake{{Peer: staked, Amount: 100}, {Peer: small, Amount: 50}, {Peer: jailed, Amount: 100}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range led.Accounts {
		if led.Accounts[i].Peer == jailed {
			led.Accounts[i].JailedUntil = 5
		}
	}
	got := core.WeightsOf(led, []string{staked, small, free, jailed})
	want := map[string]float64{staked: 1, small: 0.5, free: 0.5}
	if len(got) != len(want) || got[staked] != 1 || got[small] != 0.5 || got[free] != 0.5 {
		t.Fatalf("weights %v, want %v", got, want)
	}
	led.Params.UnstakedWeightPPM = 0
	if got := core.WeightsOf(led, []string{staked, small, free, jailed}); len(got) != 1 || got[staked] != 1 {
		t.Fatalf("with no unstaked weight: %v, want only the staked peer", got)
	}
}
