package configs

import _ "embed"

// DevnetSpec is the built-in network spec that `lowband init` writes when no --network file
// is given: a development network that accepts the simulated TEE.
//
//go:embed examples/devnet.toml
var DevnetSpec []byte
