package p2p

import (
	"context"
	"fmt"
	"testing"
	"time"

	pubsub "github.com/libp2p/go-libp2p-pubsub"
	pb "github.com/libp2p/go-libp2p-pubsub/pb"
	"github.com/libp2p/go-libp2p/core/peer"
)

// TestHeardWaitsForEveryMeshPeerButTheSender: a held message waits until every mesh peer
// but its sender has shown it holds the message, by an IDONTWANT or a copy, and no longer;
// with one silent, until the hold's end.
func TestHeardWaitsForEveryMeshPeerButTheSender(t *testing.T) {
	tr := newHeardTracer()
	mesh := func() []peer.ID { return []peer.ID{"a", "b", "c"} }
	done := make(chan struct{})
	go func() {
		defer close(done)
		tr.wait(context.Background(), "m1", "a", mesh, time.Now().Add(time.Minute))
	}()
	tr.dontWant("b", &pb.ControlMessage{Idontwant: []*pb.ControlIDontWant{{MessageIDs: []string{"m1"}}}})
	select {
	case <-done:
		t.Fatal("let go with c silent")
	case <-time.After(50 * time.Millisecond):
	}
	tr.DuplicateMessage(&pubsub.Message{ID: "m1", ReceivedFrom: "c", Message: &pb.Message{}})
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("still held once every mesh peer but the sender held it")
	}
	began := time.Now()
	tr.wait(context.Background(), "m2", "a", mesh, began.Add(100*time.Millisecond))
	if since := time.Since(began); since < 100*time.Millisecond {
		t.Fatalf("let go after %v with b and c silent, before the hold", since)
	}
}

// TestHeardBounded: the IDs remembered are bounded, the oldest forgotten first, and one
// RPC names at most heardPerRPC of them.
func TestHeardBounded(t *testing.T) {
	tr := newHeardTracer()
	var ids []string
	for i := range heardPerRPC + 10 {
		ids = append(ids, fmt.Sprint("id", i))
	}
	tr.dontWant("p", &pb.ControlMessage{Idontwant: []*pb.ControlIDontWant{{MessageIDs: ids}}})
	if len(tr.ids) != heardPerRPC {
		t.Fatalf("%d IDs taken from one RPC, want %d", len(tr.ids), heardPerRPC)
	}
	for i := range heardMax + 5 {
		tr.note(fmt.Sprint("x", i), "p")
	}
	if len(tr.ids) != heardMax || len(tr.order) != heardMax {
		t.Fatalf("%d IDs held, %d in order, want %d", len(tr.ids), len(tr.order), heardMax)
	}
	if _, ok := tr.ids["id0"]; ok {
		t.Fatal("the oldest ID was not the one forgotten")
	}
}

// TestHeardHeldMessageOutlivesAFlood: IDONTWANTs naming enough other IDs to push every
// remembered ID out do not make a held message miss the notes it waits for: it goes on
// once its mesh has spoken, long before the hold. One message's peers are bounded.
func TestHeardHeldMessageOutlivesAFlood(t *testing.T) {
	tr := newHeardTracer()
	mesh := func() []peer.ID { return []peer.ID{"a", "b"} }
	done := make(chan struct{})
	go func() {
		defer close(done)
		tr.wait(context.Background(), "m", "x", mesh, time.Now().Add(time.Hour))
	}()
	for tr.waiting("m") == false {
		time.Sleep(time.Millisecond)
	}
	for i := range heardMax/heardPerRPC + 2 {
		ids := make([]string, heardPerRPC)
		for j := range ids {
			ids[j] = fmt.Sprint("flood", i, "-", j)
		}
		tr.dontWant("attacker", &pb.ControlMessage{Idontwant: []*pb.ControlIDontWant{{MessageIDs: ids}}})
	}
	tr.note("m", "a")
	tr.note("m", "b")
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the held message missed its mesh's notes after a flood of other IDs")
	}
	for i := range 2 * heardPeers {
		tr.note("n", peer.ID(fmt.Sprint("p", i)))
	}
	if n := len(tr.ids["n"].peers); n != heardPeers {
		t.Fatalf("%d peers noted for one message, want %d", n, heardPeers)
	}
}
