package node

import (
	"context"
	"sync"
	"testing"
)

// TestCloseWhileValidatorsStartWork: validators keep running while the node closes (the
// host stops after the checks), so starting background work must be safe against close:
// no data race on the wait group, and nothing starts once close has returned.
func TestCloseWhileValidatorsStartWork(t *testing.T) {
	for range 20 {
		f := newFullTest(t, 1, func(c *fullConfig) { c.MaxAsync = 4 }).f
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 50 {
					f.goAsync(func(context.Context) {})
				}
			}()
		}
		f.close()
		if f.goAsync(func(context.Context) { t.Error("background work ran after close") }) {
			t.Fatal("background work started after close")
		}
		wg.Wait()
	}
}
