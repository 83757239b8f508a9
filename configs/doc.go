// Package configs holds lowband's two kinds of configuration as plain data:
//
//   - Config, the node's own settings (config.toml in the home directory): where it listens,
//     which bootstrap peers it dials, its API port, its log format. Each node may differ.
//   - Spec, the network spec (genesis): what every node of one network must agree on: the
//     network name, the run, the model and training recipe, the attestation policy, the
//     genesis stakes and the time base (genesis time, nominal round length) by which
//     evidence is judged instead of each node's clock. Its hash names the network's protocols and topics, so nodes of different
//     networks can never mix.
//
// The package has defaults, profiles (local, public, bootstrap), validation and file I/O.
// It imports none of lowband's other packages: node turns these values into the inputs of
// the pure packages (training, verify, incentives).
package configs
