package datasets

import "testing"

func TestRegisterLoader(t *testing.T) {
	rows := func(Request) (Rows, error) { return Rows{}, nil }
	samples := func(Request) ([]Sample, int, error) { return nil, 0, nil }
	RegisterLoader(Loader{Name: "test-rows", Rows: rows})
	if l, ok := LookupLoader("test-rows"); !ok || l.Rows == nil {
		t.Fatalf("LookupLoader(test-rows) = %+v, %v", l, ok)
	}
	if _, ok := LookupLoader("test-none"); ok {
		t.Error("LookupLoader found an unregistered loader")
	}
	found := false
	for _, n := range LoaderNames() {
		found = found || n == "test-rows"
	}
	if !found {
		t.Errorf("LoaderNames() = %v lacks test-rows", LoaderNames())
	}
	for name, l := range map[string]Loader{
		"duplicate": {Name: "test-rows", Rows: rows},
		"no name":   {Rows: rows},
		"neither":   {Name: "test-x"},
		"both":      {Name: "test-y", Rows: rows, Samples: samples},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: RegisterLoader did not panic", name)
				}
			}()
			RegisterLoader(l)
		}()
	}
}
