package api

// DiffFlame sets each node's BasePct: the share of samples the same call path (by function
// names) has in base, a tree built from the base run with no threshold. Paths of base that
// cand lacks are added with no samples, so what vanished shows too.
func DiffFlame(cand, base *FlameNode, thresholdPct float64) {
	pctOf := base.TotalPct
	cand.BasePct = &pctOf
	byName := map[[2]string]*FlameNode{}
	for _, c := range base.Children {
		byName[[2]string{c.Func, c.Kind}] = c
	}
	seen := map[[2]string]bool{}
	for _, c := range cand.Children {
		k := [2]string{c.Func, c.Kind}
		seen[k] = true
		if b := byName[k]; b != nil {
			DiffFlame(c, b, thresholdPct)
		} else {
			zero := 0.0
			c.BasePct = &zero
		}
	}
	for _, b := range base.Children {
		if seen[[2]string{b.Func, b.Kind}] || b.TotalPct < thresholdPct {
			continue
		}
		gone := &FlameNode{Func: b.Func, Image: b.Image, Kind: b.Kind, Inlined: b.Inlined}
		p := b.TotalPct
		gone.BasePct = &p
		cand.Children = append(cand.Children, gone)
	}
}
