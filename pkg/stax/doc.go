// Package stax lets a Go program tell the stax profiler what it is doing: named spans
// of time (Begin and End) and instant markers (Mark), shown by stax spans, stax
// timeline and --span on the views.
//
//	span := stax.Begin("load config")
//	defer span.End()
//
// When stax is not recording the process, Begin, End and Mark do nothing but one atomic
// load. stax tells a process it records it in one of two ways:
//
//   - a command that stax record launches has STAX_SPANS=1 in its environment: spans are
//     on from the start;
//   - a process that stax record -p attaches to gets the file /tmp/stax-PID.recording
//     (PID as the process sees itself, made by the process's own user inside its root)
//     for as long as stax records it. The package looks
//     for that file every 100 ms, from the first call of Begin or Mark on; spans are on
//     while it exists.
//
// While on, spans go to the file stax-PID.spans in STAX_JIT_DIR (default /tmp), in the
// format of stax's ITT collector, each span or marker in one write system call when it
// ends, so that none is lost when the program exits: a span then costs a few
// microseconds, which suits requests, frames and phases rather than tight loops. stax
// finds the file among the process's open files. A span or marker the file cannot take
// (a full file system) is not written in part: it is counted in the file's header as
// dropped, with the failed write and its error, and stax status and stax spans say so.
//
// stax links a span to the samples its thread took between its start and end. So that
// these are the goroutine's, Begin locks the goroutine to its thread (runtime.LockOSThread)
// while stax records, and End unlocks it: call End on the goroutine that called Begin,
// as defer does. While a goroutine is inside a span, Go's scheduler runs it on that
// thread alone (a span that blocks holds its thread). When stax does not record, nothing
// is locked. Spans carry no nesting depth (goroutines have no identity to nest them by):
// stax tells nested spans apart by their times.
//
// The package works on Linux; elsewhere its calls do nothing.
package stax
