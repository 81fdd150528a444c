package main

import (
	"fmt"
	"os"
)

func sq(x int) int { return x * x }

func add(a, b int) int { return sq(a) + b%7 }

//go:noinline
func spin(n int) int {
	s := 0
	for i := range n {
		s = add(i, s)
	}
	return s
}

func main() {
	fmt.Fprintln(os.Stdout, spin(len(os.Args)))
}
