package generate

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// arithModel is fakeModel under a fingerprint "fake:ARITH:WEIGHTS" whose
// arithmetic it can tell apart (backends.Variants).
type arithModel struct {
	fakeModel
	fp string
}

func (a *arithModel) Fingerprint(context.Context) (string, error) { return a.fp, nil }

func (a *arithModel) OtherArithmetic(current, stored string) (string, bool) {
	c, s := strings.Split(current, ":"), strings.Split(stored, ":")
	if len(c) != 3 || len(s) != 3 || c[2] != s[2] || c[1] == s[1] {
		return "", false
	}
	return "arithmetic " + s[1] + ", not " + c[1], true
}

// TestPlanSuperseded: generations of the same model under another
// arithmetic are not reused (the fingerprint is part of every key), and
// the plan names the fingerprint that holds them and why it differs; other
// models' generations and backends that cannot tell are not named.
func TestPlanSuperseded(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	runJobs(t, st, &arithModel{fakeModel: fakeModel{slots: 4}, fp: "fake:bf16:w1"}, newJob(10, 16, dot))
	runJobs(t, st, &arithModel{fakeModel: fakeModel{slots: 4}, fp: "fake:bf16:w2"}, newJob(12, 16, dot))

	f32 := &arithModel{fakeModel: fakeModel{slots: 4}, fp: "fake:f32:w1"}
	p, err := MakePlan(ctx, st, f32, []*Job{newJob(12, 16, dot)})
	if err != nil {
		t.Fatal(err)
	}
	if p.Counts[Missing] != 12 || p.Requests != 12 {
		t.Errorf("counts %v, %d requests: want all 12 missing", p.Counts, p.Requests)
	}
	want := []Superseded{{Fingerprint: "fake:bf16:w1", Why: "arithmetic bf16, not f32", Samples: 10}}
	if !reflect.DeepEqual(p.Superseded, want) {
		t.Errorf("superseded %+v, want %+v", p.Superseded, want)
	}
	_, sum := runJobs(t, st, f32, newJob(12, 16, dot))
	if sum.GenerationsNew != 12 || sum.GenerationsReused != 0 {
		t.Errorf("float32 run after bf16: %d new, %d reused; want 12 new", sum.GenerationsNew, sum.GenerationsReused)
	}
	if p, err = MakePlan(ctx, st, f32, []*Job{newJob(12, 16, dot)}); err != nil || p.Superseded != nil {
		t.Errorf("nothing missing: superseded %+v, %v", p.Superseded, err)
	}
	if p, err = MakePlan(ctx, st, &fakeModel{slots: 4}, []*Job{newJob(12, 16, dot)}); err != nil || p.Superseded != nil {
		t.Errorf("backend without variants: superseded %+v, %v", p.Superseded, err)
	}
}
