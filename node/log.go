package node

import (
	"io"
	"log/slog"

	"github.com/lowband/lowband/configs"
)

// NewLogger builds the node's logger from the log settings (format text or json).
//
// Peer IDs go into log lines as peer.ID values (or their String), which both formats print
// in full, base58 "12D3KooW...", the form `lowband peers` and the ledger use: never
// ShortString's "<peer.ID 12*abcdef>". The node's own ID is "self" (p2p) or "peer_id"
// (the start line), a remote peer's is "peer".
func NewLogger(w io.Writer, c configs.LogConfig) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level)) // validated by configs; info on anything else
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
