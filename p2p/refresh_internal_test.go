package p2p

import (
	"errors"
	"testing"
	"time"
)

// The routing table is refreshed once it holds a peer, then every ten minutes, every
// minute while it is thin, and after a failure on a growing retry.
func TestRefreshSchedule(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	var s refreshSchedule
	if s.due(t0, 0) {
		t.Fatal("due with an empty table: a lookup has no one to ask")
	}
	if !s.due(t0, 1) {
		t.Fatal("not due on the first peer")
	}
	s.done(t0, errors.New("lookup failed"))
	if s.joined {
		t.Fatal("joined after a failed refresh")
	}
	if s.due(t0.Add(tableRetryFirst-time.Millisecond), 50) || !s.due(t0.Add(tableRetryFirst), 50) {
		t.Fatal("a failed refresh is retried after tableRetryFirst")
	}
	t1 := t0.Add(tableRetryFirst)
	s.done(t1, errors.New("again"))
	if s.due(t1.Add(2*tableRetryFirst-time.Millisecond), 50) || !s.due(t1.Add(2*tableRetryFirst), 50) {
		t.Fatal("the retry doubles")
	}
	for range 20 {
		s.done(t1, errors.New("again"))
	}
	if s.retry != tableRefreshEvery {
		t.Fatalf("retry grew to %v, want at most %v", s.retry, tableRefreshEvery)
	}
	t2 := t1.Add(time.Hour)
	s.done(t2, nil)
	if !s.joined || s.retry != 0 {
		t.Fatalf("after a success: joined %v, retry %v", s.joined, s.retry)
	}
	if s.due(t2.Add(tableRefreshEvery-time.Second), tableLow+1) || !s.due(t2.Add(tableRefreshEvery), tableLow+1) {
		t.Fatal("a healthy table is refreshed every tableRefreshEvery")
	}
	if s.due(t2.Add(tableLowEvery-time.Second), tableLow) || !s.due(t2.Add(tableLowEvery), tableLow) {
		t.Fatal("a thin table is refreshed every tableLowEvery")
	}
}
