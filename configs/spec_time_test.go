package configs

import (
	"errors"
	"testing"
)

// TestTimeSpecErrorsNameFileLineAndKey: a bad time base is reported like any other key.
func TestTimeSpecErrorsNameFileLineAndKey(t *testing.T) {
	head := "version = 1\nname = \"t\"\nrun = \"r\"\n[time]\n"
	for body, key := range map[string]string{
		"genesis_time = \"yesterday\"\n":            "time.genesis_time",
		"genesis_time = \"1970-01-01T00:00:00Z\"\n": "time.genesis_time",
		"round_seconds = 100000\n":                  "time.round_seconds",
	} {
		_, err := ParseSpec("spec.toml", []byte(head+body))
		var ke *KeyError
		if !errors.As(err, &ke) || ke.Key != key || ke.Line != 5 {
			t.Errorf("%q: got %v, want %s at line 5", body, err, key)
		}
	}
	s, err := ParseSpec("spec.toml", []byte(head))
	if err != nil || s.Time.GenesisTime != DefaultGenesisTime || s.Time.RoundSeconds != defaultRoundSecs {
		t.Errorf("defaults: %+v %v", s, err)
	}
}
