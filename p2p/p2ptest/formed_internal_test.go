package p2ptest

import "testing"

// A message reaches every host only if every host is reached from one and reaches it.
func TestReachesAll(t *testing.T) {
	for _, c := range []struct {
		name string
		adj  [][]int
		want bool
	}{
		{"one node", [][]int{nil}, true},
		{"ring", [][]int{{1}, {2}, {0}}, true},
		{"two rings joined one way", [][]int{{1, 2}, {0}, {3}, {2}}, true},
		{"two rings apart", [][]int{{1}, {0}, {3}, {2}}, false},
		{"a node no one links to", [][]int{{1}, {0}, {0}}, false},
	} {
		if got := reachesAll(c.adj); got != c.want {
			t.Errorf("%s: reachesAll = %v, want %v", c.name, got, c.want)
		}
	}
}
