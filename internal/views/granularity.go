package views

import "github.com/stax-profiler/stax/internal/agg"

// At returns the profile as g counts it: its frames are the rows g asks for (functions,
// source lines, addresses or images), each location's lines name them, and every view
// (top, flame, callers) computed from it counts by them. A row by line is a Frame with the
// line's File and Line; a row by address has the location's Addr, and the function (and
// line) at it: the innermost, or the outermost with NoInline. Images are merged where one
// calls itself, so a flame graph by image shows where control passes from one to another.
//
// Stacks, entries, threads and series are shared with p (the entries' LeafFunc still name
// p's frames); the zero g returns p itself.
func At(p *agg.Profile, g agg.Granularity) *agg.Profile { return AtKeeping(p, g, nil) }

// AtKeeping is At, but the functions keep accepts stay whole functions, whatever g's By:
// callers of a function by line are the lines that call it.
func AtKeeping(p *agg.Profile, g agg.Granularity, keep func(agg.Frame) bool) *agg.Profile {
	if g.IsZero() {
		return p
	}
	if g.By == "" {
		g.By = agg.ByFunction
	}
	q := &agg.Profile{Mappings: p.Mappings, Stacks: p.Stacks, Entries: p.Entries, Threads: p.Threads, Series: p.Series,
		KeyEntry: p.KeyEntry, View: g}

	// Functions first: the frames that become one row when names are shortened.
	type funcKey struct {
		name, image, kind string
		inlined           bool
	}
	fnode := make([]uint32, len(p.Frames)) // frame -> function row
	var funcs []agg.Frame
	fidx := map[funcKey]uint32{}
	for id, fr := range p.Frames {
		name := fr.Func
		if g.Short && fr.Kind == agg.KindUser {
			name = ShortName(name)
		}
		k := funcKey{name, fr.Image, fr.Kind, fr.Inlined}
		n, ok := fidx[k]
		if !ok {
			n = uint32(len(funcs))
			fidx[k] = n
			f := fr
			f.Func = name
			funcs = append(funcs, f)
		}
		fnode[id] = n
	}
	var kept []bool // by function row
	if keep != nil && g.By != agg.ByFunction {
		kept = make([]bool, len(funcs))
		for id, fr := range p.Frames {
			if keep(fr) {
				kept[fnode[id]] = true
			}
		}
	}

	nodes := map[[3]uint64]uint32{}
	node := func(k [3]uint64, f agg.Frame) uint32 {
		id, ok := nodes[k]
		if !ok {
			id = uint32(len(q.Frames))
			nodes[k] = id
			q.Frames = append(q.Frames, f)
		}
		return id
	}
	// whole is the row of function row fn, for a function kept whole.
	whole := func(fn uint32) uint32 {
		return node([3]uint64{uint64(fn), 1 << 63, 1 << 63}, funcs[fn])
	}
	if g.By == agg.ByFunction {
		q.Frames = funcs
	}
	images := map[string]uint32{}
	lines := 0
	for i := range p.Locations {
		lines += len(p.Locations[i].Lines)
	}
	slab := make([]agg.Line, 0, lines)
	q.Locations = make([]agg.Location, len(p.Locations))
	for lid := range p.Locations {
		loc := &p.Locations[lid]
		src := loc.Lines
		if g.NoInline {
			src = src[len(src)-1:]
		}
		at := len(slab)
		switch g.By {
		case agg.ByFunction:
			for _, ln := range src {
				slab = append(slab, agg.Line{Func: fnode[ln.Func], Line: ln.Line})
			}
		case agg.ByLine:
			for _, ln := range src {
				fn := fnode[ln.Func]
				if kept != nil && kept[fn] {
					slab = append(slab, agg.Line{Func: whole(fn), Line: ln.Line})
					continue
				}
				f := funcs[fn]
				f.Line = int(ln.Line)
				f.File = p.Frames[ln.Func].File
				slab = append(slab, agg.Line{Func: node([3]uint64{uint64(fn), uint64(uint32(ln.Line))}, f), Line: ln.Line})
			}
		case agg.ByAddress:
			ln := src[0]
			fn := fnode[ln.Func]
			if kept != nil && kept[fn] {
				slab = append(slab, agg.Line{Func: whole(fn), Line: ln.Line})
				break
			}
			f := funcs[fn]
			f.Line, f.File, f.Addr = int(ln.Line), p.Frames[ln.Func].File, loc.Addr
			k := [3]uint64{loc.Addr, uint64(loc.Mapping), uint64(fn)<<32 | uint64(uint32(ln.Line))}
			slab = append(slab, agg.Line{Func: node(k, f), Line: ln.Line})
		case agg.ByImage:
			if fn := fnode[loc.Outer()]; kept != nil && kept[fn] {
				slab = append(slab, agg.Line{Func: whole(fn)})
				break
			}
			fr := &p.Frames[loc.Outer()]
			img := fr.Image
			if img == "" {
				img = "[unknown]"
			}
			id, ok := images[img]
			if !ok {
				id = uint32(len(q.Frames))
				images[img] = id
				kind := fr.Kind
				if kind == agg.KindUnknown {
					kind = agg.KindUser
				}
				q.Frames = append(q.Frames, agg.Frame{Func: img, Image: img, Kind: kind})
			}
			slab = append(slab, agg.Line{Func: id})
		}
		q.Locations[lid] = agg.Location{Addr: loc.Addr, Mapping: loc.Mapping, Lines: slab[at:len(slab):len(slab)]}
	}
	q.ExpandStacks()
	if g.By == agg.ByImage {
		q = Transformed(q, &Transform{mergeRuns: true})
		q.View = g
	}
	return q
}
