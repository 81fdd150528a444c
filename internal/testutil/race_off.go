//go:build !race

package testutil

// Race is true when the tests are built with -race.
const Race = false
