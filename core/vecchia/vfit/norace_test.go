//go:build !race

package vfit

// raceEnabled: the tests run under the race detector (go test -race).
const raceEnabled = false
