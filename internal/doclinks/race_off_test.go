//go:build !race

package doclinks

// raceEnabled is whether the test runs under the race detector; the
// snippet test then builds with -race too, to share the build cache.
const raceEnabled = false
