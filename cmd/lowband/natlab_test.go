package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestHomeNodesBehindTwoNATsTrainThroughTheBootstrapRelay runs scripts/natlab.sh: a
// bootstrap node in a "public" network namespace and two nodes each behind its own
// masquerading NAT (nft), which can dial the bootstrap node and not each other. Both
// home nodes close rounds together with both contributions on one root; each is
// connected to the other, through the bootstrap node's relay or, after a hole punch,
// directly; AutoNAT finds the home nodes private. It needs root, ip and nft.
func TestHomeNodesBehindTwoNATsTrainThroughTheBootstrapRelay(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("natlab needs root for network namespaces")
	}
	for _, tool := range []string{"ip", "nft", "jq", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("natlab needs %s (scripts/deps.sh installs it)", tool)
		}
	}
	dir := t.TempDir()
	out, err := exec.Command("bash", "../../scripts/natlab.sh", "-b", lowbandBin, "-d", dir, "-r", "2", "-t", "90").CombinedOutput()
	t.Logf("natlab.sh:\n%s", out)
	if err != nil {
		t.Fatalf("natlab.sh: %v", err)
	}
	text := string(out)
	// The script says how many rounds both closed together each time the count grows;
	// two can close between its looks, so the last count, not the line of 2, is checked.
	var together int
	for _, m := range regexp.MustCompile(`on one root: ([0-9]+) after`).FindAllStringSubmatch(text, -1) {
		together, _ = strconv.Atoi(m[1])
	}
	if together < 2 {
		t.Errorf("natlab.sh counted %d rounds closed together, want at least 2", together)
	}
	for _, want := range []string{
		"neither dials the other",
		"home1: AutoNAT v1 says private",
		"home2: AutoNAT v1 says private",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("natlab.sh did not say %q", want)
		}
	}
	for _, home := range []string{"home1", "home2"} {
		if !regexp.MustCompile(`natlab: ` + home + ` reaches the other home node (through the relay|directly)`).MatchString(text) {
			t.Errorf("%s is not connected to the other home node", home)
		}
	}
	if out, _ := exec.Command("ip", "netns", "list").Output(); strings.Contains(string(out), "lbnat") {
		t.Errorf("namespaces left behind:\n%s", out)
	}
	if left := processesUnder(t, dir); len(left) > 0 {
		t.Errorf("processes left behind: %v", left)
	}
}
