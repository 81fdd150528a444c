//go:build race

package testutil

// Race is true when the tests are built with -race: the stax binary they run is then
// built with -race too, so the recorder's and server's goroutines are checked as well.
const Race = true
