package configs

import (
	"errors"
	"testing"
)

// TestRoundSpecErrorsNameFileLineAndKey: a bad round-closing rule is reported like any
// other key, and an absent [round] section takes the defaults.
func TestRoundSpecErrorsNameFileLineAndKey(t *testing.T) {
	head := "version = 1\nname = \"t\"\nrun = \"r\"\n[round]\n"
	for body, key := range map[string]string{
		"quorum = 1.5\n":                         "round.quorum",
		"quorum = -0.1\n":                        "round.quorum",
		"quorum = nan\n":                         "round.quorum",
		"deadline_max = 100000\n":                "round.deadline_max",
		"deadline_max = inf\n":                   "round.deadline_max",
		"deadline_max = -1\n":                    "round.deadline_max",
		"deadline_min = 30\ndeadline_max = 10\n": "round.deadline_min",
		"deadline_min = -1\n":                    "round.deadline_min",
		"deadline_k = -3\n":                      "round.deadline_k",
		"deadline_k = 5000\n":                    "round.deadline_k",
	} {
		_, err := ParseSpec("spec.toml", []byte(head+body))
		var ke *KeyError
		if !errors.As(err, &ke) || ke.Key != key || ke.Line < 5 || ke.File != "spec.toml" {
			t.Errorf("%q: got %v, want %s in spec.toml from line 5", body, err, key)
		}
	}
	s, err := ParseSpec("spec.toml", []byte("version = 1\nname = \"t\"\nrun = \"r\"\n"))
	if err != nil || s.Round != (RoundSpec{Quorum: DefaultQuorum, DeadlineMin: DefaultDeadlineMin, DeadlineMax: DefaultDeadlineMax, DeadlineK: DefaultDeadlineK}) {
		t.Errorf("defaults: %+v %v", s.Round, err)
	}
	// A maximum below the default minimum pulls the minimum down with it.
	s, err = ParseSpec("spec.toml", []byte(head+"deadline_max = 2\n"))
	if err != nil || s.Round.DeadlineMin != 2 {
		t.Errorf("deadline_max 2: %+v %v", s.Round, err)
	}
}

// TestRoundSpecIsHashed: two networks that close rounds differently have different IDs.
func TestRoundSpecIsHashed(t *testing.T) {
	head := "version = 1\nname = \"t\"\nrun = \"r\"\n"
	a, err := ParseSpec("a.toml", []byte(head))
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"[round]\nquorum = 0.5\n", "[round]\ndeadline_min = 1\n", "[round]\ndeadline_max = 60\n", "[round]\ndeadline_k = 2\n"} {
		b, err := ParseSpec("b.toml", []byte(head+body))
		if err != nil {
			t.Fatal(err)
		}
		if a.NetworkID() == b.NetworkID() {
			t.Errorf("%q: same network ID %s", body, a.NetworkID())
		}
	}
}
