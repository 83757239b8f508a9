package p2ptest

import (
	"context"
	"log/slog"
	"strings"
	"sync"
)

// LogRecorder is a slog.Handler that keeps every record's message, for tests
// that assert what a host logged. Safe for concurrent use.
type LogRecorder struct {
	mu   sync.Mutex
	msgs []string
}

var _ slog.Handler = (*LogRecorder)(nil)

// Logger returns a logger writing to r.
func (r *LogRecorder) Logger() *slog.Logger { return slog.New(r) }

// Enabled accepts every level.
func (r *LogRecorder) Enabled(context.Context, slog.Level) bool { return true }

// Handle keeps the record's message.
func (r *LogRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, rec.Message)
	return nil
}

// WithAttrs returns r: attributes are not kept.
func (r *LogRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }

// WithGroup returns r: groups are not kept.
func (r *LogRecorder) WithGroup(string) slog.Handler { return r }

// Count returns how many messages contain substr.
func (r *LogRecorder) Count(substr string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.msgs {
		if strings.Contains(m, substr) {
			n++
		}
	}
	return n
}

// Messages returns a copy of the messages so far.
func (r *LogRecorder) Messages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.msgs...)
}
