package main

import (
	"runtime/debug"
)

// memoryLimit sets the Go runtime's soft memory limit to limitMiB (config.toml's
// memory_limit_mib) unless env, the GOMEMLIMIT environment variable, is set (the runtime
// has read it then), or limitMiB is 0. It returns the limit in force in bytes
// (math.MaxInt64: none).
func memoryLimit(limitMiB int, env string) int64 {
	if env == "" && limitMiB > 0 {
		debug.SetMemoryLimit(int64(limitMiB) << 20)
	}
	return debug.SetMemoryLimit(-1)
}
