package doctor

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Level is how a check came out.
type Level int

// Levels, from good to bad. Skip is a check that could not run (its input is missing, or
// the protocol gives no way to measure it); it is not a failure.
const (
	OK Level = iota
	Skip
	Warn
	Fail
)

func (l Level) String() string {
	switch l {
	case OK:
		return "OK"
	case Skip:
		return "SKIP"
	case Warn:
		return "WARN"
	default:
		return "FAIL"
	}
}

// MarshalText writes the level as OK, SKIP, WARN or FAIL.
func (l Level) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// Result is one line of the report.
type Result struct {
	Check  string `json:"check"`         // what was checked: "identity key", "port tcp 0.0.0.0:4001", ...
	Level  Level  `json:"level"`         // OK, SKIP, WARN or FAIL
	Detail string `json:"detail"`        // what was found
	Fix    string `json:"fix,omitempty"` // what to do about it, for WARN and FAIL
}

func ok(check, format string, a ...any) Result {
	return Result{Check: check, Level: OK, Detail: fmt.Sprintf(format, a...)}
}

func skip(check, format string, a ...any) Result {
	return Result{Check: check, Level: Skip, Detail: fmt.Sprintf(format, a...)}
}

func warn(check, detail, fix string) Result {
	return Result{Check: check, Level: Warn, Detail: detail, Fix: fix}
}

func fail(check, detail, fix string) Result {
	return Result{Check: check, Level: Fail, Detail: detail, Fix: fix}
}

// Failed reports whether any result is Fail.
func Failed(rs []Result) bool {
	for _, r := range rs {
		if r.Level == Fail {
			return true
		}
	}
	return false
}

// Print writes one line per result: level, check, what was found and, after "->", what
// to do.
func Print(w io.Writer, rs []Result) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, r := range rs {
		line := r.Detail
		if r.Fix != "" {
			line += " -> " + r.Fix
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Level, r.Check, line)
	}
	return tw.Flush()
}
