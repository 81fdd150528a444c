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
//     (PID as the process sees itself) for as long as stax records it. The package looks
//     for that file every 100 ms, from the first call of Begin or Mark on; spans are on
//     while it exists.
//
// While on, spans go to the file stax-PID.spans in STAX_JIT_DIR (default /tmp), in the
// format of stax's ITT collector, each span or marker in one write system call when it
// ends. stax finds the file among the process's open files.
//
// A span belongs to the OS thread its goroutine ran on when Begin was called: the samples
// stax links to it are that thread's between Begin and End. A goroutine that moves to
// another thread in the middle of a span (Go's scheduler may move it at any time) has
// the samples taken after the move left out of the span; runtime.LockOSThread prevents
// the move where that matters. Spans carry no nesting depth (goroutines have no
// identity to nest them by): nested spans are told apart by their times.
//
// The package works on Linux; elsewhere its calls do nothing.
package stax
