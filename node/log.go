package node

import (
	"io"
	"log/slog"

	"github.com/lowband/lowband/configs"
)

// NewLogger builds the node's logger from the log settings (format text or json).
func NewLogger(w io.Writer, c configs.LogConfig) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level)) // validated by configs; info on anything else
	opts := &slog.HandlerOptions{Level: level}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
