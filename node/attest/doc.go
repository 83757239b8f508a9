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
// A node calls CheckProducerAllowed before it starts, so that it never runs with a producer
// its network does not accept; NewProducer, then Attest once per epoch to bind a fresh
// ephemeral key; and PolicyFromSpec to get the policy it verifies peers against. Every
// verdict with Insecure set must be logged as insecure.
package attest
