package round

// Phase names a part of a Machine's work that a Meter may time.
type Phase int

// The phases a Machine reports to its Meter.
const (
	// PhaseEncode: compressing this node's pseudo-gradient and cutting it into shards
	// (LocalDone).
	PhaseEncode Phase = iota
	// PhaseDecode: reconstructing one contribution's dense tensors into a parameter vector
	// and checking it (Close, once per contribution).
	PhaseDecode
	// PhaseAggregate: combining the decoded contributions (Close).
	PhaseAggregate
	// PhaseOuter: the outer optimizer's step on θ (Close).
	PhaseOuter
)

// String returns the phase's name.
func (p Phase) String() string {
	switch p {
	case PhaseEncode:
		return "encode"
	case PhaseDecode:
		return "decode"
	case PhaseAggregate:
		return "aggregate"
	case PhaseOuter:
		return "outer"
	}
	return "unknown"
}

// Meter is told when each phase begins and ends, so that the caller can time the parts of
// a round (the Machine itself reads no clock). Begin and End come in pairs, never nested,
// on the goroutine that called the Machine's method.
type Meter interface {
	Begin(Phase)
	End(Phase)
}

// begin and end report to the configured Meter, if any.
func (m *Machine) begin(p Phase) { begin(m.cfg.Meter, p) }

func (m *Machine) end(p Phase) { end(m.cfg.Meter, p) }

func begin(mt Meter, p Phase) {
	if mt != nil {
		mt.Begin(p)
	}
}

func end(mt Meter, p Phase) {
	if mt != nil {
		mt.End(p)
	}
}
