// Package spans keeps the named intervals of time a recorded program reports about itself:
// ITT tasks, the lines of marker files, and the instants `stax mark` drops into a live run.
//
// A span is a name, the thread it ran on, and a start and an end on CLOCK_MONOTONIC (the
// clock of samples); a marker is a span whose end is its start. The parsers here read
// bytes the profiled program wrote: they bound every size, cut over-long names, count what
// they cannot read and never panic. Set keeps a run's spans within a fixed budget and
// counts, per source, what it received and what it had to drop.
package spans
