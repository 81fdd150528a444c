//go:build linux

package main

// callJIT calls the generated function at addr and returns its result.
func callJIT(addr uintptr) uint64
