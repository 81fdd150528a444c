// Package jitdump lets a Go program that generates machine code at run time
// announce that code to profilers, by writing perf's jitdump format
// (jit-<pid>.dump) and the perf map text format (perf-<pid>.map).
//
// Profilers such as stax and perf read these files to name the functions
// and source lines of samples that land in generated code. Timestamps are
// CLOCK_MONOTONIC, as perf record -k mono and stax expect.
//
// A Writer is safe for use by several goroutines; each record reaches the
// file in a single write system call, so a reader tailing the file never
// sees a record torn by a concurrent writer.
//
// The writers are available on Linux only.
package jitdump
