package node

import "time"

// clock is where the round loop reads the time: the real clock in production, a fake in
// tests that drive deadlines.
type clock interface {
	Now() time.Time
	NewTicker(d time.Duration) ticker
}

// ticker is a time.Ticker behind an interface.
type ticker interface {
	C() <-chan time.Time
	Stop()
}

// realClock is the system clock.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTicker(d time.Duration) ticker { return realTicker{time.NewTicker(d)} }

type realTicker struct{ t *time.Ticker }

func (t realTicker) C() <-chan time.Time { return t.t.C }
func (t realTicker) Stop()               { t.t.Stop() }
