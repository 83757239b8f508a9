package configs

// TestingSpec is what a network allows for testing itself. A production network leaves it
// out: nothing in it is on by default, and the public profile refuses a network that turns
// any of it on (node.CheckAdversary).
type TestingSpec struct {
	// AllowAdversaries lets nodes of this network run an adversary mode (`lowband run
	// --adversary KIND`): they misbehave on purpose, to test that the network withstands it.
	AllowAdversaries bool `toml:"allow_adversaries" cbor:"1,keyasint" comment:"nodes may run adversary modes (lowband run --adversary): test networks only"`
}
