package drop

import "math"

// linearSumAssignment is scipy.optimize.linear_sum_assignment (minimise) as
// implemented in scipy 1.10.1, scipy/optimize/rectangular_lsap/
// rectangular_lsap.cpp (Crouse's shortest augmenting path, PM Larsen):
// the same visiting order and tie-breaking, so equal-cost alternatives are
// resolved to the same assignment. cost is row-major nr×nc. It returns
// (rows, cols) with rows ascending, as scipy does. Costs are finite here.
func linearSumAssignment(nr, nc int, cost []float64) (rows, cols []int) {
	if nr == 0 || nc == 0 {
		return nil, nil
	}
	transpose := nc < nr
	if transpose {
		t := make([]float64, nr*nc)
		for i := 0; i < nr; i++ {
			for j := 0; j < nc; j++ {
				t[j*nr+i] = cost[i*nc+j]
			}
		}
		cost = t
		nr, nc = nc, nr
	}
	u := make([]float64, nr)
	v := make([]float64, nc)
	shortest := make([]float64, nc)
	path := make([]int, nc)
	col4row := make([]int, nr)
	row4col := make([]int, nc)
	sr := make([]bool, nr)
	sc := make([]bool, nc)
	remaining := make([]int, nc)
	for i := range path {
		path[i] = -1
		row4col[i] = -1
	}
	for i := range col4row {
		col4row[i] = -1
	}
	for cur := 0; cur < nr; cur++ {
		// augmenting_path
		minVal := 0.0
		numRemaining := nc
		for it := 0; it < nc; it++ {
			remaining[it] = nc - it - 1
		}
		clear(sr)
		clear(sc)
		for j := range shortest {
			shortest[j] = math.Inf(1)
		}
		i := cur
		sink := -1
		for sink == -1 {
			index := -1
			lowest := math.Inf(1)
			sr[i] = true
			for it := 0; it < numRemaining; it++ {
				j := remaining[it]
				r := minVal + cost[i*nc+j] - u[i] - v[j]
				if r < shortest[j] {
					path[j] = i
					shortest[j] = r
				}
				if shortest[j] < lowest || (shortest[j] == lowest && row4col[j] == -1) {
					lowest = shortest[j]
					index = it
				}
			}
			minVal = lowest
			if math.IsInf(minVal, 1) {
				return nil, nil // infeasible; cannot happen with finite costs
			}
			j := remaining[index]
			if row4col[j] == -1 {
				sink = j
			} else {
				i = row4col[j]
			}
			sc[j] = true
			numRemaining--
			remaining[index] = remaining[numRemaining]
		}
		// update dual variables
		u[cur] += minVal
		for i := 0; i < nr; i++ {
			if sr[i] && i != cur {
				u[i] += minVal - shortest[col4row[i]]
			}
		}
		for j := 0; j < nc; j++ {
			if sc[j] {
				v[j] -= minVal - shortest[j]
			}
		}
		// augment previous solution
		j := sink
		for {
			i := path[j]
			row4col[j] = i
			col4row[i], j = j, col4row[i]
			if i == cur {
				break
			}
		}
	}
	rows = make([]int, nr)
	cols = make([]int, nr)
	if transpose {
		// argsort of col4row (distinct values): pair (col4row[v], v) in
		// ascending col4row order.
		for k := range cols {
			cols[k] = -1
		}
		order := make([]int, nc)
		for k := range order {
			order[k] = -1
		}
		for r, c := range col4row {
			order[c] = r
		}
		k := 0
		for c, r := range order {
			if r >= 0 {
				rows[k], cols[k] = c, r
				k++
			}
		}
		return rows, cols
	}
	for i := range rows {
		rows[i] = i
		cols[i] = col4row[i]
	}
	return rows, cols
}
