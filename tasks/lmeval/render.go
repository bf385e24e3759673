package lmeval

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/ardanlabs/jinja"
)

// renderState is what one render has spent of its bounds (guard.go); the
// guard's helpers are bound to it.
type renderState struct {
	steps, limit int64 // spent, and the budget
	out          int64 // bytes written, template text included
	texts        []string
}

// step charges n steps.
func (st *renderState) step(n int64) error {
	st.steps += n
	if st.steps > st.limit {
		return fmt.Errorf("the render took more than %d steps (a loop or a value too large for the template bounds): refused (%w)", st.limit, errBound)
	}
	return nil
}

// walk charges v's size (its values, and its text in bytesPerStep
// pieces), refusing a value nested past maxNesting (a namespace that holds
// itself).
func (st *renderState) walk(v jinja.Value, level int) error {
	if level > maxNesting {
		return fmt.Errorf("a value nested more than %d deep (one that holds itself?): refused (%w)", maxNesting, errBound)
	}
	switch {
	case v.IsString():
		return st.step(1 + int64(len(v.AsString()))/bytesPerStep)
	case v.IsList():
		if err := st.step(1); err != nil {
			return err
		}
		for _, e := range v.AsList().Items {
			if err := st.walk(e, level+1); err != nil {
				return err
			}
		}
	case v.IsDict():
		if err := st.step(1); err != nil {
			return err
		}
		d := v.AsDict()
		for _, k := range d.Keys {
			e, _ := d.Get(k)
			if err := st.step(int64(len(k)) / bytesPerStep); err != nil {
				return err
			}
			if err := st.walk(e, level+1); err != nil {
				return err
			}
		}
	default:
		return st.step(1)
	}
	return nil
}

// size is v's text in bytes and its count of values (nested ones
// included), counted no further than past the bounds of a kept value.
func size(v jinja.Value, level int, bytes, values *int) error {
	if level > maxNesting {
		return fmt.Errorf("a value nested more than %d deep: refused (%w)", maxNesting, errBound)
	}
	*values++
	if v.IsString() {
		*bytes += len(v.AsString())
	}
	if *bytes > maxValueBytes || *values > maxItems {
		return fmt.Errorf("a value of more than %d bytes of text or %d values: refused (%w)", maxValueBytes, maxItems, errBound)
	}
	switch {
	case v.IsList():
		for _, e := range v.AsList().Items {
			if err := size(e, level+1, bytes, values); err != nil {
				return err
			}
		}
	case v.IsDict():
		d := v.AsDict()
		for _, k := range d.Keys {
			e, _ := d.Get(k)
			*bytes += len(k)
			if err := size(e, level+1, bytes, values); err != nil {
				return err
			}
		}
	}
	return nil
}

// write counts n bytes of output.
func (st *renderState) write(n int) error {
	st.out += int64(n)
	if st.out > maxOutput {
		return fmt.Errorf("the render wrote more than %d bytes: refused (%w)", maxOutput, errBound)
	}
	return st.step(1 + int64(n)/bytesPerStep)
}

// helper is the callable of that name a guarded template calls, bound to
// st (a render makes those its template names); nil for another name.
func (st *renderState) helper(name string) helper {
	pass := func(check func(v jinja.Value) error) helper {
		return func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			if len(args) != 1 {
				return jinja.Undefined(), fmt.Errorf("%s: one value", name)
			}
			if err := check(args[0]); err != nil {
				return jinja.Undefined(), err
			}
			return args[0], nil
		}
	}
	switch name {
	case "__tally_w":
		return pass(func(v jinja.Value) error { return st.walk(v, 0) })
	case "__tally_keep":
		return pass(func(v jinja.Value) error {
			if err := st.walk(v, 0); err != nil {
				return err
			}
			var b, n int
			return size(v, 0, &b, &n)
		})
	case "__tally_iter":
		return pass(func(v jinja.Value) error {
			if !v.IsString() {
				return st.walk(v, 0)
			}
			n := utf8.RuneCountInString(v.AsString())
			if n > maxItems {
				return fmt.Errorf("a loop over a string of more than %d characters: refused (%w)", maxItems, errBound)
			}
			return st.step(int64(n) + 1)
		})
	case "__tally_text":
		return func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			i := int(args[0].AsInt())
			if err := st.write(len(st.texts[i])); err != nil {
				return jinja.Undefined(), err
			}
			return jinja.NewString(st.texts[i]), nil
		}
	case "__tally_out":
		return func(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
			if len(args) == 1 {
				if err := st.walk(args[0], 0); err != nil {
					return jinja.Undefined(), err
				}
			}
			v, err := strHelper(args, kw)
			if err == nil {
				err = st.write(len(v.AsString()))
			}
			return v, err
		}
	case "__tally_string":
		return strHelper
	case "__tally_cond_undefined":
		return func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
			return jinja.NewString(condUndefined), nil
		}
	case "__tally_trim":
		return trimHelper
	case "__tally_join":
		return joinHelper
	case "__tally_strip":
		return stripHelper(true, true)
	case "__tally_lstrip":
		return stripHelper(true, false)
	case "__tally_rstrip":
		return stripHelper(false, true)
	case "__tally_split":
		return splitHelper
	case "__tally_add":
		return st.arith("+")
	case "__tally_cat":
		return st.arith("~")
	case "__tally_mul":
		return st.arith("*")
	case "__tally_replace", "__tally_replace_method":
		method := name == "__tally_replace_method"
		return func(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
			return st.replace(args, kw, method)
		}
	case "__tally_list":
		return st.list
	case "__tally_slice":
		return st.slice
	case "__tally_range":
		return st.rangeHelper
	}
	return nil
}

// arith is a chain of + or ~, or a *, as Python computes them (jinja2's
// operators), the result's size known before it is made: + joins strings
// or lists and adds numbers; ~ joins the str() of each; * repeats a
// string or a list (nothing for a count below one) or multiplies.
func (st *renderState) arith(op string) helper {
	return func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		vals := make([]any, len(args))
		for i, a := range args {
			v, err := fromJinja(a)
			if err != nil {
				return jinja.Undefined(), err
			}
			vals[i] = v
		}
		switch op {
		case "~":
			parts := make([]string, len(vals))
			n := 0
			for i, v := range vals {
				parts[i] = pyStr(v)
				n += len(parts[i])
			}
			if err := st.text(n); err != nil {
				return jinja.Undefined(), err
			}
			return jinja.NewString(strings.Join(parts, "")), nil
		case "*":
			return st.mul(vals[0], vals[1])
		}
		switch vals[0].(type) {
		case string:
			n := 0
			for _, v := range vals {
				s, ok := v.(string)
				if !ok {
					return jinja.Undefined(), fmt.Errorf("can only concatenate str (not %s) to str", pyTypeName(v))
				}
				n += len(s)
			}
			if err := st.text(n); err != nil {
				return jinja.Undefined(), err
			}
			var b strings.Builder
			b.Grow(n)
			for _, v := range vals {
				b.WriteString(v.(string))
			}
			return jinja.NewString(b.String()), nil
		case []any:
			n := 0
			for _, v := range vals {
				l, ok := v.([]any)
				if !ok {
					return jinja.Undefined(), fmt.Errorf("can only concatenate list (not %s) to list", pyTypeName(v))
				}
				n += len(l)
			}
			if err := st.items(n); err != nil {
				return jinja.Undefined(), err
			}
			out := make([]jinja.Value, 0, n)
			for _, a := range args {
				out = append(out, a.AsList().Items...)
			}
			return jinja.NewList(out), nil
		}
		sum := jinja.NewInt(0)
		for i, v := range vals {
			n, ok := pyNumber(v)
			if !ok {
				return jinja.Undefined(), fmt.Errorf("unsupported operand types for +: %s", pyTypeName(v))
			}
			if i == 0 {
				sum = n
				continue
			}
			if sum.IsInt() && n.IsInt() {
				sum = jinja.NewInt(sum.AsInt() + n.AsInt())
			} else {
				sum = jinja.NewFloat(asFloat(sum) + asFloat(n))
			}
		}
		return sum, nil
	}
}

// mul is Python's a * b.
func (st *renderState) mul(a, b any) (jinja.Value, error) {
	if _, ok := a.(string); !ok {
		if _, isList := a.([]any); !isList {
			a, b = b, a // 3 * 'x' is 'x' * 3
		}
	}
	switch x := a.(type) {
	case string, []any:
		nv, ok := pyNumber(b)
		if !ok || !nv.IsInt() {
			return jinja.Undefined(), fmt.Errorf("can't multiply sequence by non-int of type %s", pyTypeName(b))
		}
		n := max(nv.AsInt(), 0)
		if s, isStr := x.(string); isStr {
			if n > 0 && int64(len(s)) > maxValueBytes/n {
				return jinja.Undefined(), st.text(maxValueBytes + 1)
			}
			if err := st.text(len(s) * int(n)); err != nil {
				return jinja.Undefined(), err
			}
			return jinja.NewString(strings.Repeat(s, int(n))), nil
		}
		l := x.([]any)
		if n > 0 && int64(len(l)) > maxItems/n {
			return jinja.Undefined(), st.items(maxItems + 1)
		}
		if err := st.items(len(l) * int(n)); err != nil {
			return jinja.Undefined(), err
		}
		items := make([]jinja.Value, 0, len(l)*int(n))
		for range n {
			for _, e := range l {
				items = append(items, toJinja(e))
			}
		}
		return jinja.NewList(items), nil
	}
	na, okA := pyNumber(a)
	nb, okB := pyNumber(b)
	if !okA || !okB {
		return jinja.Undefined(), fmt.Errorf("unsupported operand types for *: %s and %s", pyTypeName(a), pyTypeName(b))
	}
	if na.IsInt() && nb.IsInt() {
		return jinja.NewInt(na.AsInt() * nb.AsInt()), nil
	}
	return jinja.NewFloat(asFloat(na) * asFloat(nb)), nil
}

// text and items charge a result of n bytes or n values, refusing one
// past the bounds of a value.
func (st *renderState) text(n int) error {
	if n > maxValueBytes || n < 0 {
		return fmt.Errorf("a string of more than %d bytes: refused (%w)", maxValueBytes, errBound)
	}
	return st.step(1 + int64(n)/bytesPerStep)
}

func (st *renderState) items(n int) error {
	if n > maxItems || n < 0 {
		return fmt.Errorf("a list of more than %d values: refused (%w)", maxItems, errBound)
	}
	return st.step(1 + int64(n))
}

// replace is str.replace (method: the receiver must be a str) and
// jinja2's replace filter (str() of the value), the result's size known
// before it is made.
func (st *renderState) replace(args []jinja.Value, kw map[string]jinja.Value, method bool) (jinja.Value, error) {
	if len(args) < 3 {
		return jinja.Undefined(), errors.New("replace: expected the old and the new text")
	}
	var s string
	if method {
		r, err := receiver(args, "replace")
		if err != nil {
			return jinja.Undefined(), err
		}
		s = r
	} else {
		v, err := fromJinja(args[0])
		if err != nil {
			return jinja.Undefined(), err
		}
		s = pyStr(v)
	}
	var strs [2]string
	for i := range strs {
		v, err := fromJinja(args[1+i])
		if err != nil {
			return jinja.Undefined(), err
		}
		str, ok := v.(string)
		if !ok {
			if method {
				return jinja.Undefined(), fmt.Errorf("replace() argument %d must be str, not %s", i+1, pyTypeName(v))
			}
			str = pyStr(v)
		}
		strs[i] = str
	}
	count := int64(-1)
	c, ok := kw["count"]
	if len(args) > 3 {
		c, ok = args[3], true
	}
	if ok && !c.IsNone() {
		if !c.IsInt() {
			return jinja.Undefined(), errors.New("replace: count is not an int")
		}
		count = c.AsInt()
	}
	old, new := strs[0], strs[1]
	n := int64(strings.Count(s, old))
	if old == "" {
		n = int64(utf8.RuneCountInString(s)) + 1
	}
	if count >= 0 && count < n {
		n = count
	}
	if grown := int64(len(s)) + n*int64(len(new)-len(old)); grown > maxValueBytes {
		return jinja.Undefined(), st.text(maxValueBytes + 1)
	} else if err := st.text(int(grown)); err != nil {
		return jinja.Undefined(), err
	}
	if count > int64(maxValueBytes) {
		count = -1
	}
	return jinja.NewString(strings.Replace(s, old, new, int(count))), nil
}

// list is jinja2's list filter: a str's characters, a dict's keys, a
// list's copy.
func (st *renderState) list(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 {
		return jinja.Undefined(), errors.New("list: one value")
	}
	v := args[0]
	switch {
	case v.IsUndefined():
		return jinja.Undefined(), errors.New("undefined value (jinja2's StrictUndefined raises here)")
	case v.IsString():
		s := v.AsString()
		if err := st.items(utf8.RuneCountInString(s)); err != nil {
			return jinja.Undefined(), err
		}
		out := make([]jinja.Value, 0, utf8.RuneCountInString(s))
		for _, r := range s {
			out = append(out, jinja.NewString(string(r)))
		}
		return jinja.NewList(out), nil
	case v.IsList():
		return jinja.NewList(append([]jinja.Value(nil), v.AsList().Items...)), nil
	case v.IsDict():
		keys := v.AsDict().Keys
		out := make([]jinja.Value, len(keys))
		for i, k := range keys {
			out[i] = jinja.NewString(k)
		}
		return jinja.NewList(out), nil
	}
	x, _ := fromJinja(v)
	return jinja.Undefined(), fmt.Errorf("'%s' object is not iterable", pyTypeName(x))
}

// slice is Python's seq[start:stop:step] of a str (its code points) or a
// list, the bounds clamped as slice.indices clamps them.
func (st *renderState) slice(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 4 {
		return jinja.Undefined(), errors.New("slice: four values")
	}
	var bounds [3]*int64
	for i, a := range args[1:] {
		switch {
		case a.IsNone():
		case a.IsInt():
			n := a.AsInt()
			bounds[i] = &n
		case a.IsBool():
			n := int64(0)
			if a.AsBool() {
				n = 1
			}
			bounds[i] = &n
		default:
			return jinja.Undefined(), errors.New("slice indices must be integers or None")
		}
	}
	v := args[0]
	var n int
	var runes []rune
	switch {
	case v.IsString():
		runes = []rune(v.AsString())
		n = len(runes)
	case v.IsList():
		n = v.AsList().Len()
	case v.IsUndefined():
		return jinja.Undefined(), errors.New("undefined value (jinja2's StrictUndefined raises here)")
	default:
		x, _ := fromJinja(v)
		return jinja.Undefined(), fmt.Errorf("'%s' object is not subscriptable", pyTypeName(x))
	}
	start, stop, step, err := sliceIndices(bounds, int64(n))
	if err != nil {
		return jinja.Undefined(), err
	}
	var idx []int64
	for i := start; (step > 0 && i < stop) || (step < 0 && i > stop); i += step {
		idx = append(idx, i)
	}
	if err := st.items(len(idx)); err != nil {
		return jinja.Undefined(), err
	}
	if runes != nil || v.IsString() {
		out := make([]rune, len(idx))
		for k, i := range idx {
			out[k] = runes[i]
		}
		return jinja.NewString(string(out)), nil
	}
	items := v.AsList().Items
	out := make([]jinja.Value, len(idx))
	for k, i := range idx {
		out[k] = items[i]
	}
	return jinja.NewList(out), nil
}

// sliceIndices is Python's slice.indices(n).
func sliceIndices(b [3]*int64, n int64) (start, stop, step int64, err error) {
	step = 1
	if b[2] != nil {
		step = *b[2]
	}
	if step == 0 {
		return 0, 0, 0, errors.New("slice step cannot be zero")
	}
	lo, hi := int64(0), n
	if step < 0 {
		lo, hi = -1, n-1
	}
	clamp := func(p *int64, def int64) int64 {
		if p == nil {
			return def
		}
		x := *p
		if x < 0 {
			x += n
		}
		return min(max(x, lo), hi)
	}
	if step > 0 {
		return clamp(b[0], 0), clamp(b[1], n), step, nil
	}
	return clamp(b[0], n-1), clamp(b[1], -1), step, nil
}

// rangeHelper is Python's range, of at most maxRange numbers (jinja2's
// sandbox's bound).
func (st *renderState) rangeHelper(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	var xs [3]int64
	for i, a := range args {
		switch {
		case i >= 3:
			return jinja.Undefined(), errors.New("range: one to three ints")
		case a.IsInt():
			xs[i] = a.AsInt()
		case a.IsFloat() && a.AsFloat() == math.Trunc(a.AsFloat()) && math.Abs(a.AsFloat()) < 1<<62:
			// The engine computes 10**9 as a float; Python as an int.
			xs[i] = int64(a.AsFloat())
		default:
			return jinja.Undefined(), errors.New("range: one to three ints")
		}
	}
	start, stop, step := int64(0), xs[0], int64(1)
	switch len(args) {
	case 0:
		return jinja.Undefined(), errors.New("range expected at least 1 argument, got 0")
	case 2:
		start, stop = xs[0], xs[1]
	case 3:
		start, stop, step = xs[0], xs[1], xs[2]
	}
	if step == 0 {
		return jinja.Undefined(), errors.New("range() arg 3 must not be zero")
	}
	var count uint64
	if step > 0 && stop > start {
		count = (uint64(stop)-uint64(start)-1)/uint64(step) + 1
	} else if step < 0 && start > stop {
		count = (uint64(start)-uint64(stop)-1)/(uint64(-(step+1))+1) + 1
	}
	if count > maxRange {
		return jinja.Undefined(), fmt.Errorf("range of more than %d numbers: refused (%w)", maxRange, errBound)
	}
	if err := st.items(int(count)); err != nil {
		return jinja.Undefined(), err
	}
	out := make([]jinja.Value, count)
	for k := range out {
		out[k] = jinja.NewInt(start + int64(k)*step)
	}
	return jinja.NewList(out), nil
}

// pyNumber is a number operand (a bool counts as an int).
func pyNumber(v any) (jinja.Value, bool) {
	switch x := v.(type) {
	case int64:
		return jinja.NewInt(x), true
	case float64:
		return jinja.NewFloat(x), true
	case bool:
		if x {
			return jinja.NewInt(1), true
		}
		return jinja.NewInt(0), true
	}
	return jinja.Undefined(), false
}

func asFloat(v jinja.Value) float64 {
	if v.IsInt() {
		return float64(v.AsInt())
	}
	return v.AsFloat()
}

// pyTypeName is Python's type name of a value.
func pyTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case []any:
		return "list"
	case *Map:
		return "dict"
	}
	return fmt.Sprintf("%T", v)
}
