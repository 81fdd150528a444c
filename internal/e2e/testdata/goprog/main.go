// A Go program with a hot function, for Go symbol names.
package main

import (
	"fmt"
	"os"
	"strconv"
)

var sink uint64

// mix is small enough for the compiler to inline into hotLoop.
func mix(i, s uint64) uint64 { return i ^ (s >> 3) }

//go:noinline
func hotLoop(n uint64) uint64 {
	var s uint64
	for i := uint64(0); i < n; i++ {
		s += mix(i, s)
	}
	return s
}

func main() {
	n := uint64(300000000)
	if len(os.Args) > 1 {
		if v, err := strconv.ParseUint(os.Args[1], 10, 64); err == nil {
			n = v
		}
	}
	sink = hotLoop(n)
	fmt.Println("go done", sink%10)
}
