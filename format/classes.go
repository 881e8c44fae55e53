package format

import (
	"encoding/json"
	"fmt"
)

// KeyClasses marks a multi-class covariance stream (and the cloud and
// posteriors made from it): the class names, in class order, as a JSON
// array of strings. Such a stream's train rows are the N (C - 1) class
// differences of the multinomial probit model (package gp's Multiclass),
// each with y = +1; its test rows come C to a test point, point t's
// utility of class c at test row t C + c, each with the point's id and,
// when the test file had labels, y = the true class's index.
const KeyClasses = "gpc:classes"

// JoinClasses encodes class names for KeyClasses.
func JoinClasses(names []string) string {
	b, _ := json.Marshal(names) // a []string always marshals
	return string(b)
}

// SplitClasses decodes KeyClasses' value. It returns an error for a value
// that is not a JSON array of at least two strings, each given once.
func SplitClasses(s string) ([]string, error) {
	var names []string
	if err := json.Unmarshal([]byte(s), &names); err != nil {
		return nil, fmt.Errorf("format: %s %q is not a JSON array of class names: %v", KeyClasses, s, err)
	}
	if len(names) < 2 {
		return nil, fmt.Errorf("format: %s %q names %d class(es), not at least 2", KeyClasses, s, len(names))
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return nil, fmt.Errorf("format: %s names class %q twice", KeyClasses, n)
		}
		seen[n] = true
	}
	return names, nil
}
