package p2p

import "github.com/libp2p/go-libp2p/core/peer"

// AgentVersion is the agent version a peer sent in identify, or "" while the host has
// not identified it (or it sent none).
func (h *Host) AgentVersion(p peer.ID) string {
	v, err := h.h.Peerstore().Get(p, "AgentVersion")
	if err != nil {
		return ""
	}
	s, _ := v.(string)
	return s
}
