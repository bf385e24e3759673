package pyre

// firstSet is a necessary condition on the first character of a match: a
// non-empty match at a position must begin with a character the
// predicate accepts. A search skips the positions where it cannot (as
// sre's search does with a pattern's literal prefix or charset). any is
// true when every character may begin a match; nullable when the pattern
// may match the empty string (then no position may be skipped).
type firstSet struct {
	preds    []func(rune) bool
	any      bool
	nullable bool
}

func (f firstSet) accepts(c rune) bool {
	if f.any {
		return true
	}
	for _, p := range f.preds {
		if p(c) {
			return true
		}
	}
	return false
}

func (f *firstSet) union(g firstSet) {
	f.any = f.any || g.any
	f.preds = append(f.preds, g.preds...)
}

// first computes the first-character condition of a node.
func first(n node) firstSet {
	switch x := n.(type) {
	case *lit:
		c := x.c
		return firstSet{preds: []func(rune) bool{func(r rune) bool { return r == c }}}
	case *anyChar:
		return firstSet{preds: []func(rune) bool{x.matches}}
	case *class:
		return firstSet{preds: []func(rune) bool{x.matches}}
	case *at, *assert:
		return firstSet{nullable: true}
	case *seq:
		var out firstSet
		for _, it := range x.items {
			f := first(it)
			out.union(f)
			if !f.nullable {
				return out
			}
		}
		out.nullable = true
		return out
	case *alt:
		var out firstSet
		for _, b := range x.branches {
			f := first(b)
			out.union(f)
			out.nullable = out.nullable || f.nullable
		}
		return out
	case *group:
		return first(x.sub)
	case *atomicGroup:
		return first(x.sub)
	case *repeat:
		f := first(x.sub)
		f.nullable = f.nullable || x.min == 0
		return f
	}
	return firstSet{any: true, nullable: true}
}
