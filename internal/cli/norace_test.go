//go:build !race

package cli

// raceEnabled: the tests run under the race detector (go test -race).
const raceEnabled = false
