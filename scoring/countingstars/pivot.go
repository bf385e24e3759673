package countingstars

import (
	"math"
	"sort"
	"tally/scoring/npsum"
)

// Cell is one scored cell of the reference's data frame: a counting time
// (1..m), a context-size column and a score.
type Cell struct {
	CountingTime int
	Column       int64
	Score        float64
}

// Pivot is the reference's pivot table: the mean score per (counting time,
// column), with rows and columns sorted ascending. Missing combinations
// are NaN.
type Pivot struct {
	Rows    []int
	Columns []int64
	// Values[r][c] is the cell mean for Rows[r], Columns[c].
	Values [][]float64
}

// MakePivot is pd.pivot_table(df, values='Score', index=['Counting Times',
// 'Context Size'], aggfunc='mean') followed by .pivot(...). Scores are
// multiples of 0.25, so group sums are exact and the group mean does not
// depend on pandas' summation order.
func MakePivot(cells []Cell) Pivot {
	type key struct {
		r int
		c int64
	}
	sums := map[key]float64{}
	counts := map[key]int{}
	rowSet, colSet := map[int]bool{}, map[int64]bool{}
	for _, c := range cells {
		k := key{c.CountingTime, c.Column}
		sums[k] += c.Score
		counts[k]++
		rowSet[c.CountingTime] = true
		colSet[c.Column] = true
	}
	var p Pivot
	for r := range rowSet {
		p.Rows = append(p.Rows, r)
	}
	for c := range colSet {
		p.Columns = append(p.Columns, c)
	}
	sort.Ints(p.Rows)
	sort.Slice(p.Columns, func(i, j int) bool { return p.Columns[i] < p.Columns[j] })
	p.Values = make([][]float64, len(p.Rows))
	for i, r := range p.Rows {
		p.Values[i] = make([]float64, len(p.Columns))
		for j, c := range p.Columns {
			k := key{r, c}
			if n := counts[k]; n > 0 {
				p.Values[i][j] = sums[k] / float64(n)
			} else {
				p.Values[i][j] = math.NaN()
			}
		}
	}
	return p
}

// Mean is pivot_table.mean(axis=None) in pandas 2 (nanops.nanmean over
// DataFrame.values): numpy's pairwise sum of the non-missing cells divided
// by their count, the cells taken column by column (the frame's memory
// order) when none is missing and row by row (pandas first copies the
// values to fill the NaNs) otherwise. NaN when there is no cell.
func (p Pivot) Mean() float64 {
	var vals []float64
	missing := false
	for _, row := range p.Values {
		for _, v := range row {
			if math.IsNaN(v) {
				missing = true
			}
		}
	}
	n := 0
	if missing {
		for _, row := range p.Values {
			for _, v := range row {
				if math.IsNaN(v) {
					v = 0
				} else {
					n++
				}
				vals = append(vals, v)
			}
		}
	} else {
		for j := range p.Columns {
			for i := range p.Rows {
				vals = append(vals, p.Values[i][j])
				n++
			}
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return npsum.Sum(vals) / float64(n)
}

// Round3 is numpy's round(x, 3) as .round(3) applies it: rint(x*1000)/1000
// (half to even on the scaled double, unlike Python's round).
func Round3(x float64) float64 {
	return math.RoundToEven(x*1000) / 1000
}
