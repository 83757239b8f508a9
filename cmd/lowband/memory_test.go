package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestMemoryLimitFromConfigUnlessGOMEMLIMIT: memory_limit_mib sets the runtime's limit,
// 0 leaves it, and a GOMEMLIMIT in the environment wins over the config.
func TestMemoryLimitFromConfigUnlessGOMEMLIMIT(t *testing.T) {
	old := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(old)
	if got := memoryLimit(300, ""); got != 300<<20 {
		t.Errorf("limit %d, want 300 MiB", got)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	if got := memoryLimit(0, ""); got != math.MaxInt64 {
		t.Errorf("limit %d with 0 in the config, want none", got)
	}
	debug.SetMemoryLimit(1 << 30) // as the runtime does for GOMEMLIMIT=1GiB
	if got := memoryLimit(300, "1GiB"); got != 1<<30 {
		t.Errorf("limit %d with GOMEMLIMIT set, want its 1 GiB", got)
	}
}
