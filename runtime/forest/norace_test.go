//go:build !race

package forest_test

const raceEnabled = false
