package core

import "fmt"

// Trace, if not nil, is told what a preparation (Choose, PrepareTrace) is
// about to do, one short phrase at a time (EP's sweeps with their change,
// the recompute, the ordering and factorisation, the tilting solve, each
// pilot), so that a tool can report where an O(N^3) preparation spends its
// time. It is called from the preparing goroutine only; the phrases do not
// affect the result.
type Trace func(phase string)

func (t Trace) printf(format string, args ...any) {
	if t != nil {
		t(fmt.Sprintf(format, args...))
	}
}
