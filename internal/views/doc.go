// Package views computes what stax shows of a run from its profile (agg.Profile, the run
// model): top functions, processes and threads; flame graphs, inverted, cut to a subtree
// or to a function's callers or callees; callers and callees; timelines and stack charts;
// the comparison of two runs; and the off-CPU, wall-clock, wakers and thread-state views.
// Transforms (focus, ignore, hide, collapse images, fold recursion, Python frames) and
// granularities (by source line, address or image; short names) first make another
// profile, which every view takes as it is. Views read the profiles they are given and
// never change them, so live and stored runs are shown alike.
package views
