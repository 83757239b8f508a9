package configs

import (
	"errors"
	"testing"
)

// TestAgreementSpecErrorsNameTheKey: a bad agreement section is reported with its key, and
// an absent one takes the defaults.
func TestAgreementSpecErrorsNameTheKey(t *testing.T) {
	head := "version = 1\nname = \"t\"\nrun = \"r\"\n[agreement]\n"
	for body, key := range map[string]string{
		"repair_depth = -1\n":         "agreement.repair_depth",
		"repair_depth = 17\n":         "agreement.repair_depth",
		"checkpoint_every = -5\n":     "agreement.checkpoint_every",
		"checkpoint_every = 100001\n": "agreement.checkpoint_every",
		"checkpoints_kept = 65\n":     "agreement.checkpoints_kept",
		"checkpoints_kept = -1\n":     "agreement.checkpoints_kept",
	} {
		_, err := ParseSpec("spec.toml", []byte(head+body))
		var ke *KeyError
		if !errors.As(err, &ke) || ke.Key != key || ke.File != "spec.toml" {
			t.Errorf("%q: got %v, want %s", body, err, key)
		}
	}
	s, err := ParseSpec("spec.toml", []byte("version = 1\nname = \"t\"\nrun = \"r\"\n"))
	want := AgreementSpec{RepairDepth: DefaultRepairDepth, CheckpointEvery: DefaultCheckpointEvery, CheckpointsKept: DefaultCheckpointsKept}
	if err != nil || s.Agreement != want {
		t.Errorf("defaults: %+v %v", s.Agreement, err)
	}
}

// TestAgreementSpecIsHashed: two networks that repair or checkpoint differently have
// different IDs.
func TestAgreementSpecIsHashed(t *testing.T) {
	head := "version = 1\nname = \"t\"\nrun = \"r\"\n"
	a, err := ParseSpec("a.toml", []byte(head))
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"[agreement]\nrepair_depth = 2\n", "[agreement]\ncheckpoint_every = 5\n", "[agreement]\ncheckpoints_kept = 2\n"} {
		b, err := ParseSpec("b.toml", []byte(head+body))
		if err != nil {
			t.Fatal(err)
		}
		if a.NetworkID() == b.NetworkID() {
			t.Errorf("%q: same network ID %s", body, a.NetworkID())
		}
	}
}
