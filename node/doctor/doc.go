// Package doctor checks a node's setup and says plainly what is wrong and what to do:
// the home directory and identity key, config and network spec, the attestation producer
// against the network's policy and this machine, listen ports, each bootstrap peer (dial
// and protocol), the running node's DHT table, gossip topics and reachability, the clock
// and its skew against the bootstrap peers, and free disk.
//
// Each check is a function from what it needs (paths, parsed config, a prober, what the
// running node reported) to Results, so every check runs in tests without a network.
// Run calls them in order; a check whose input is missing (no config, node not running)
// is reported as skipped, never as an error. `lowband doctor` prints the results and
// exits non-zero when any is Fail.
package doctor
