package configs

import "testing"

// TestTestingSpecIsHashed: a network that allows adversary modes is another network than
// one that does not, and an absent [testing] section allows none.
func TestTestingSpecIsHashed(t *testing.T) {
	head := "version = 1\nname = \"t\"\nrun = \"r\"\n"
	a, err := ParseSpec("a.toml", []byte(head))
	if err != nil {
		t.Fatal(err)
	}
	if a.Testing.AllowAdversaries {
		t.Fatal("a spec without [testing] allows adversaries")
	}
	b, err := ParseSpec("b.toml", []byte(head+"[testing]\nallow_adversaries = true\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !b.Testing.AllowAdversaries {
		t.Fatal("allow_adversaries = true was not read")
	}
	if a.NetworkID() == b.NetworkID() {
		t.Fatalf("allowing adversaries keeps the network ID %s", a.NetworkID())
	}
}
