//go:build !linux

package node

import "time"

// threadCPU is not read off Linux: calls are charged their wall time.
func threadCPU() (time.Duration, bool) { return 0, false }
