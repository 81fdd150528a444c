// Package jit reads the files through which just-in-time compilers announce
// the code they generate, and keeps a per-process, time-aware table of that
// code for symbolization.
//
// Two formats are understood: perf's jitdump format (including stax's
// extension records 100 STAX_METHOD_ID, 101 STAX_INLINE and
// 102 STAX_CODE_UNLOAD), and the perf map text format
// ("START SIZE name" lines in /tmp/perf-<pid>.map).
//
// The parsers work over byte slices and are incremental: they return the
// whole records found and how many bytes those took, so that a caller
// tailing a growing file re-reads a partial trailing record on its next
// poll. Every size read from a file is bounded before anything is
// allocated, and malformed input yields an error, never a panic.
//
// Table holds the functions of one process. Entries carry load and end
// times, so that a sample taken at time t resolves to the code that was at
// the sampled address at t even when the JIT has since reused the address.
package jit
