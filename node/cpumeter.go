package node

import (
	"runtime"
	"sync/atomic"
	"time"
)

// cpuMeter sums the CPU time spent in verification calls: each call is locked to its OS
// thread while it runs, and charged the thread's CPU time over the call (where the thread
// clock is not read, the call's wall time). Safe for concurrent use; a nil meter counts
// nothing.
type cpuMeter struct{ ns atomic.Int64 }

// meterStart is when a charged call began: the thread's CPU time and the wall clock.
type meterStart struct {
	cpu  time.Duration
	ok   bool // cpu was read
	wall time.Time
}

// start begins charging a call, locking the goroutine to its thread until stop:
// defer m.stop(m.start()).
func (m *cpuMeter) start() meterStart {
	if m == nil {
		return meterStart{}
	}
	runtime.LockOSThread()
	cpu, ok := threadCPU()
	return meterStart{cpu: cpu, ok: ok, wall: time.Now()}
}

// stop charges the call begun at s and unlocks the thread.
func (m *cpuMeter) stop(s meterStart) {
	if m == nil {
		return
	}
	defer runtime.UnlockOSThread()
	if cpu, ok := threadCPU(); ok && s.ok {
		m.ns.Add(int64(max(cpu-s.cpu, 0)))
		return
	}
	m.since(s.wall)
}

// since charges the wall time elapsed since start, which overstates CPU on a loaded
// machine: what stop falls back to where the thread clock is not read.
func (m *cpuMeter) since(start time.Time) {
	if m != nil {
		m.ns.Add(int64(time.Since(start)))
	}
}

// seconds is the total charged so far.
func (m *cpuMeter) seconds() float64 {
	if m == nil {
		return 0
	}
	return time.Duration(m.ns.Load()).Seconds()
}
