package node

import (
	"crypto/sha256"
	"testing"
	"time"
)

// TestVerifyMeterChargesCPUNotWaiting: a verification call that waits (a goroutine
// descheduled on a loaded machine) is charged the CPU it used, not the time it waited; one
// that computes is charged.
func TestVerifyMeterChargesCPUNotWaiting(t *testing.T) {
	m := &cpuMeter{}
	func() {
		defer m.stop(m.start())
		time.Sleep(300 * time.Millisecond)
	}()
	if s := m.seconds(); s > 0.1 {
		t.Fatalf("a call that slept 0.3 s was charged %.3f s", s)
	}
	before := m.seconds()
	func() {
		defer m.stop(m.start())
		b := []byte("x")
		for range 200_000 {
			s := sha256.Sum256(b)
			b = s[:]
		}
	}()
	if m.seconds() <= before {
		t.Fatalf("a call that hashed 200000 times was charged nothing")
	}
}
