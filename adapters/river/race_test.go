//go:build race

package reboundriver

// raceEnabled is true under the race detector, which slows the pure-Go
// SQLite driver by an order of magnitude.
const raceEnabled = true
