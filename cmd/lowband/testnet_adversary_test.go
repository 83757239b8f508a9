package main

import (
	"strings"
	"testing"
)

// TestTableJudgesHonestNodesOnlyAndReportsSlashedAdversaries: a node running an adversary
// mode is marked in the summary, its own root does not count against the honest nodes'
// agreement, and the table says which adversaries the honest nodes slashed and that no
// honest peer was.
func TestTableJudgesHonestNodesOnlyAndReportsSlashedAdversaries(t *testing.T) {
	nodes, err := readStatusFiles(cannedStatus)
	if err != nil {
		t.Fatal(err)
	}
	adv, honest := &nodes[0].Status, &nodes[1].Status
	adv.Training.Adversary = "equivocate"
	for i := range adv.Training.Rounds {
		adv.Training.Rounds[i].StateRoot = strings.Repeat("ee", 32)
	}
	honest.Training.Slashed = []string{adv.PeerID}
	s, err := summarise(nodes, 0)
	if err != nil {
		t.Fatal(err)
	}
	if s.Nodes[0].Adversary != "equivocate" {
		t.Errorf("summary marks node1 as %q", s.Nodes[0].Adversary)
	}
	var b strings.Builder
	if err := writeTable(&b, nodes, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"state root after 4 rounds: all 1 honest nodes agree",
		"adversary node1 (equivocate): slashed by 1 of 1 honest nodes", "honest peers slashed: none"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	honest.Training.Slashed = append(honest.Training.Slashed, honest.PeerID)
	s, _ = summarise(nodes, 0)
	b.Reset()
	if err := writeTable(&b, nodes, s); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "honest peers slashed: node2 by 1") {
		t.Errorf("table hides a slashed honest peer:\n%s", b.String())
	}
}
