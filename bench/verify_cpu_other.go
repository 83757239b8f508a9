//go:build !linux

package bench

import "time"

// threadCPU is not measured off Linux: rates per CPU-second are reported as 0.
func threadCPU() time.Duration { return 0 }
