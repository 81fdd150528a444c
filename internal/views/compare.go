package views

import (
	"math"
	"path/filepath"
	"sort"

	"github.com/stax-profiler/stax/internal/agg"
)

// CompareRow is one function's shares of samples in two runs. Shares are percentages of
// each run's samples, so runs of different lengths compare.
type CompareRow struct {
	Func          string  `json:"func"`
	Image         string  `json:"image"`
	Kind          string  `json:"kind"`
	BaseSelf      uint64  `json:"base_self"`
	CandSelf      uint64  `json:"cand_self"`
	BaseSelfPct   float64 `json:"base_self_pct"`
	CandSelfPct   float64 `json:"cand_self_pct"`
	DeltaSelfPct  float64 `json:"delta_self_pct"` // cand - base, percentage points
	BaseTotalPct  float64 `json:"base_total_pct"`
	CandTotalPct  float64 `json:"cand_total_pct"`
	DeltaTotalPct float64 `json:"delta_total_pct"`
}

// Impact orders rows: the larger of the self and total changes.
func (r CompareRow) Impact() float64 {
	return max(math.Abs(r.DeltaSelfPct), math.Abs(r.DeltaTotalPct))
}

// Compare matches functions of two profiles by name and image file name (the image's
// directory may differ between machines) and returns their changes, largest first.
func Compare(base, cand *agg.Profile) (rows []CompareRow, baseSamples, candSamples uint64) {
	b, baseSamples := Top(base, Filter{}, 0, false)
	c, candSamples := Top(cand, Filter{}, 0, false)
	type key struct{ fn, image string }
	index := map[key]int{}
	for _, r := range b {
		k := key{r.Func, filepath.Base(r.Image)}
		if _, dup := index[k]; dup {
			continue
		}
		index[k] = len(rows)
		rows = append(rows, CompareRow{Func: r.Func, Image: r.Image, Kind: r.Kind, BaseSelf: r.Self,
			BaseSelfPct: r.SelfPct, BaseTotalPct: r.TotalPct})
	}
	for _, r := range c {
		k := key{r.Func, filepath.Base(r.Image)}
		i, ok := index[k]
		if !ok {
			i = len(rows)
			index[k] = i
			rows = append(rows, CompareRow{Func: r.Func, Image: r.Image, Kind: r.Kind})
		}
		row := &rows[i]
		row.CandSelf += r.Self
		row.CandSelfPct += r.SelfPct
		row.CandTotalPct = max(row.CandTotalPct, r.TotalPct)
	}
	for i := range rows {
		r := &rows[i]
		r.DeltaSelfPct = r.CandSelfPct - r.BaseSelfPct
		r.DeltaTotalPct = r.CandTotalPct - r.BaseTotalPct
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if a, b := rows[i].Impact(), rows[j].Impact(); a != b {
			return a > b
		}
		return rows[i].Func < rows[j].Func
	})
	return rows, baseSamples, candSamples
}
