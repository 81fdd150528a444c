// Package agg is the run model: a Run aggregates the samples of one recording into
// interned stacks (AddSample is the recorder's hot path), names them through a Resolver,
// and snapshots them as a Profile: frames, mappings, locations, stacks, entries (samples
// per thread and stack), threads, and the series of every sample's time. Beside them a
// run keeps its off-CPU intervals, its tracepoints' raw samples, the sums of the counters
// read with its samples, and the processes folded once they exit. Live runs and stored
// runs share the Profile type; package views computes what stax shows from it.
package agg
