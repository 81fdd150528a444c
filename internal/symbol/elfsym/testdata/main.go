package main

import (
	"fmt"
	"os"
)

//go:noinline
func spin(n int) int {
	s := 0
	for i := range n {
		s += i * i
	}
	return s
}

func main() {
	fmt.Fprintln(os.Stdout, spin(len(os.Args)))
}
