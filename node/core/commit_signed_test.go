package core_test

import (
	"bytes"
	"testing"
)

// TestCommitCarriesTheSignedRecordItPublishes: a core with an identity hands the caller,
// with each commit, the signed record bytes it publishes for the round (so the store can
// keep them for an offline audit): they decode, verify and wrap the committed record.
func TestCommitCarriesTheSignedRecordItPublishes(t *testing.T) {
	s := newSwarm(t, 1, ledgerParams(), four, []uint64{100, 100, 100, 100})
	closeRound0(s)
	for _, n := range s.nodes {
		if len(n.commits) == 0 {
			t.Fatalf("%s committed nothing", n.name)
		}
		c := n.commits[0]
		if !bytes.Equal(c.Signed, s.records[n.id][0]) {
			t.Fatalf("%s: the commit carries %d signed bytes, not the %d it published", n.name, len(c.Signed), len(s.records[n.id][0]))
		}
	}
}
