//go:build race

package vecchia

// raceEnabled: the tests run under the race detector (go test -race).
const raceEnabled = true
