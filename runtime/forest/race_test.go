//go:build race

package forest_test

// raceEnabled: the race detector makes sync.Pool drop buffers at random, so tests of
// what a call allocates do not hold.
const raceEnabled = true
