// Package attest is the node side of attestation: it produces this node's evidence and
// turns the network spec into a verify.Policy. Unlike package verify, it touches the
// kernel and the filesystem.
//
// Producers:
//   - sev-snp: an AMD SEV-SNP report through the kernel's configfs-tsm report interface
//     (go-sev-guest's client; the legacy /dev/sev-guest ioctl is the fallback), with the
//     VCEK or VLEK certificate the host provides in the report's auxiliary blob.
//   - tdx: an Intel TDX quote through configfs-tsm (go-tdx-guest's client).
//   - sim: evidence signed by a sim root key read from a file (or the public devnet root):
//     no protection at all, for testnets.
//
// A node calls CheckStart (or CheckProducerAllowed) before it starts, so that it never runs
// with a producer its network does not accept, nor with the public profile on a network
// that accepts sim; NewProducer, then Attest once per epoch (EpochOf) to bind a fresh
// ephemeral key; PolicyFromSpec (plus CollateralFromConfig for TDX) to get the policy it
// verifies peers against; and a Verifier, which caches verdicts and logs every acceptance
// of simulated evidence as insecure.
package attest
