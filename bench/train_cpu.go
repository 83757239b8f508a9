package bench

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user + system) this process has used so far. Phases of a
// training mode run one after another, so differences of cpuTime measure a phase's compute
// without counting other processes on a shared machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
