package cli

// Many training points: where the dense path ends, which tools have a
// Vecchia path, and what each tool says to try when the dense path does
// not fit. One place to update when a tool gets its Vecchia path (gpc-fit's
// is being built: issue 37).

import "fmt"

// noVecchiaTools are the tools that have no Vecchia path yet: they work on
// the dense covariance alone.
const noVecchiaTools = "gpc-fit, gpc-tune and gpc-mcmc"

// largeNHelp ends the --help of the tools that read training features: at
// what N the dense path ends, and which tools have a Vecchia path.
const largeNHelp = `Many training points: the dense path holds about three N x N matrices and does N^3 work (10^4 points: about 3 GB and 1.5 minutes on two cores; 2 x 10^4: 12 GB and 9 minutes), so from about 10^4 training points use the Vecchia path, gpc-kernel --vecchia auto (O(N m) memory and O(m) work per particle and point for m neighbours: 10^5 points in about a minute, 10^6 in 12 minutes; docs/vecchia.md), which gpc-train, gpc-orthant, gpc-predict and gpc-merge read. ` + noVecchiaTools + ` have no Vecchia path yet: choose the hyperparameters on a random subsample of a few thousand rows, then run gpc-kernel with them (--hyper FILE, or --alpha and --beta) and --vecchia auto on all the rows.`

// largeNAdvice is what the tool named says to try when the dense path's
// N x N matrices do not fit in memory.
func largeNAdvice(tool string) string {
	switch tool {
	case "gpc-fit", "gpc-tune", "gpc-mcmc":
		return fmt.Sprintf("%s works on the dense covariance only (%s have no Vecchia path yet): choose the hyperparameters on a random subsample of a few thousand rows (gpc-fit at 4500 orthant variables: about 11 minutes on two cores, docs/fitting.md), then run gpc-kernel with them (--hyper FILE, or --alpha and --beta) and --vecchia auto on all the rows (docs/vecchia.md)", tool, noVecchiaTools)
	}
	return "gpc-kernel --vecchia auto writes a Vecchia model of the training data instead, of O(N) memory, which this tool reads (docs/vecchia.md)"
}

// denseTooLarge is an estimate whose N x N factorisations do not fit in the
// memory available: bad input for the dense path (exit 65), whose message
// ends with what the tool says to try (largeNAdvice).
type denseTooLarge struct {
	msg  string
	tool string // set by run, which knows it
}

func (e *denseTooLarge) Error() string {
	if e.tool == "" {
		return e.msg
	}
	return e.msg + ": " + largeNAdvice(e.tool)
}

func (e *denseTooLarge) ExitCode() int { return ExitData }
