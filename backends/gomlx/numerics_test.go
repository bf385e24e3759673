package gomlx

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"

	"tally/backends"
)

// cpuArith is the start of a native fingerprint on this machine's pure-Go
// backend with products in products: "gomlx:PRODUCTS:cpu-FAMILY:numerics-N".
func cpuArith(products string) string {
	return "gomlx:" + Arithmetic{Products: products, Device: "cpu-" + kernelFamily(), Numerics: NumericsVersion}.String()
}

func TestParseDType(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want DType
		err  bool
	}{
		{"", DTypeAuto, false}, {"auto", DTypeAuto, false}, {"AUTO", DTypeAuto, false},
		{"float32", DTypeFloat32, false}, {"float", DTypeFloat32, false}, {"fp32", DTypeFloat32, false},
		{"bfloat16", DTypeBFloat16, false}, {"bf16", DTypeBFloat16, false}, {" BFloat16 ", DTypeBFloat16, false},
		{"float16", DTypeFloat16, false}, {"half", DTypeFloat16, false}, {"fp16", DTypeFloat16, false},
		{"float64", "", true}, {"int8", "", true}, {"bfloat", "", true},
	} {
		got, err := ParseDType(tc.in)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("ParseDType(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.err)
		}
		if err != nil && !strings.Contains(err.Error(), "auto, float32, bfloat16 or float16") {
			t.Errorf("ParseDType(%q) error %q does not list the modes", tc.in, err)
		}
	}
	for _, d := range DTypes() {
		if got, err := ParseDType(string(d)); got != d || err != nil {
			t.Errorf("ParseDType(%q) = %q, %v", d, got, err)
		}
	}
	if _, err := Open(context.Background(), "demo", Options{DType: "int4"}); err == nil || !strings.Contains(err.Error(), "int4") {
		t.Errorf("Open with --dtype int4: %v", err)
	}
}

func TestParseFingerprint(t *testing.T) {
	for _, tc := range []struct {
		fp       string
		arith    Arithmetic
		identity string
		ok       bool
	}{
		{"gomlx:bfloat16:cpu-avx512:numerics-1:sha256:ab", Arithmetic{"bfloat16", "cpu-avx512", 1}, "sha256:ab", true},
		{"gomlx:float32:xla-cuda:numerics-12:demo-v3:sha256:ab", Arithmetic{"float32", "xla-cuda", 12}, "demo-v3:sha256:ab", true},
		{"gomlx:float32:sha256:ab", Arithmetic{Products: "float32"}, "sha256:ab", true},
		{"gomlx:float32:demo-v3:sha256:ab", Arithmetic{Products: "float32"}, "demo-v3:sha256:ab", true},
		{"ollama:sha256:ab:Q4_0:llama", Arithmetic{}, "", false},
		{"gomlx:x", Arithmetic{}, "", false},
	} {
		a, id, ok := ParseFingerprint(tc.fp)
		if a != tc.arith || id != tc.identity || ok != tc.ok {
			t.Errorf("ParseFingerprint(%q) = %+v, %q, %v; want %+v, %q, %v", tc.fp, a, id, ok, tc.arith, tc.identity, tc.ok)
		}
	}
}

// FuzzParseFingerprint: a fingerprint written from an arithmetic and an
// identity parses back to them.
func FuzzParseFingerprint(f *testing.F) {
	f.Add("bfloat16", "cpu-avx512", 1, "sha256:ab")
	f.Add("float32", "xla-cuda", 3, "demo-v3:sha256:00")
	f.Fuzz(func(t *testing.T, products, device string, n int, identity string) {
		if n <= 0 || products == "" || device == "" || identity == "" ||
			strings.Contains(products, ":") || strings.Contains(device, ":") {
			return
		}
		a := Arithmetic{products, device, n}
		got, id, ok := ParseFingerprint("gomlx:" + a.String() + ":" + identity)
		if !ok || got != a || id != identity {
			t.Fatalf("parse(%q) = %+v, %q, %v", "gomlx:"+a.String()+":"+identity, got, id, ok)
		}
	})
}

func TestOtherArithmetic(t *testing.T) {
	cur := "gomlx:float32:cpu-avx512:numerics-2:sha256:ab"
	for _, tc := range []struct {
		stored, want string
		ok           bool
	}{
		{"gomlx:bfloat16:cpu-avx512:numerics-2:sha256:ab", "products in bfloat16, not float32", true},
		{"gomlx:float32:cpu-avx2:numerics-2:sha256:ab", "computed on cpu-avx2, not cpu-avx512", true},
		{"gomlx:bfloat16:xla-cuda:numerics-1:sha256:ab", "products in bfloat16, not float32, computed on xla-cuda, not cpu-avx512, engine numerics version 1, not 2", true},
		{"gomlx:float32:sha256:ab", "made by an older tally whose fingerprint named no numerics version (products float32); this engine computes float32:cpu-avx512:numerics-2", true},
		{cur, "", false},
		{"gomlx:bfloat16:cpu-avx512:numerics-2:sha256:cd", "", false},
		{"ollama:sha256:ab:Q4_0:llama", "", false},
	} {
		got, ok := otherArithmetic(cur, tc.stored)
		if got != tc.want || ok != tc.ok {
			t.Errorf("otherArithmetic(%q) = %q, %v; want %q, %v", tc.stored, got, ok, tc.want, tc.ok)
		}
	}
}

// TestFingerprintArithmetic: the fingerprint names the products' dtype the
// model computes in, its device kind and the numerics version; the weights'
// identity is the same in every mode, and a mode that computes the same
// (auto and float32 on a float32 file) has the same fingerprint.
func TestFingerprintArithmetic(t *testing.T) {
	ctx := context.Background()
	fps := map[DType]string{}
	for _, mode := range DTypes() {
		m := openFixture(t, "llama-tiny", Options{DType: mode})
		fp, err := m.Fingerprint(ctx)
		if err != nil {
			t.Fatal(err)
		}
		products := string(mode)
		if mode == DTypeAuto {
			products = "float32"
		}
		if !strings.HasPrefix(fp, cpuArith(products)+":sha256:") || m.Arithmetic().Products != products {
			t.Errorf("--dtype %s: fingerprint %q, arithmetic %+v", mode, fp, m.Arithmetic())
		}
		fps[mode] = fp
	}
	if fps[DTypeAuto] != fps[DTypeFloat32] || fps[DTypeBFloat16] == fps[DTypeFloat32] || fps[DTypeFloat16] == fps[DTypeBFloat16] {
		t.Errorf("fingerprints %v", fps)
	}
	if why, ok := otherArithmetic(fps[DTypeFloat32], fps[DTypeBFloat16]); !ok || why != "products in bfloat16, not float32" {
		t.Errorf("float32 run against stored bfloat16: %q, %v", why, ok)
	}
}

// TestAnnouncement: the first Generate names the products' dtype, and says
// when a forced half dtype runs the slow way on this machine's kernels
// (float16 on every pure-Go kernel family, bfloat16 but on AVX-512).
func TestAnnouncement(t *testing.T) {
	for _, tc := range []struct {
		mode DType
		want string
	}{
		{DTypeAuto, "products in float32\n"},
		{DTypeBFloat16, "products in bfloat16"},
		{DTypeFloat16, "products in float16 (float16 products are slower than float32 on the " + familyName(kernelFamily()) + " kernels)\n"},
	} {
		if tc.mode == DTypeBFloat16 {
			if fastProducts(dtypes.BFloat16, kernelFamily()) {
				tc.want += "\n"
			} else {
				tc.want += " (bfloat16 products are slower than float32 on the " + familyName(kernelFamily()) + " kernels)\n"
			}
		}
		var log strings.Builder
		m := openFixture(t, "llama-tiny", Options{DType: tc.mode, Log: &log})
		if err := m.Generate(context.Background(), []backends.Request{{PromptIDs: []int{1, 2}, MaxTokens: 1}}, func(backends.Event) bool { return true }); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(log.String(), "native: "+m.Kernels()+", ") || !strings.Contains(log.String(), tc.want) {
			t.Errorf("--dtype %s: logged %q, want %q", tc.mode, log.String(), tc.want)
		}
	}
}

// roundedCheckpoint writes the fixture name with every tensor rounded to
// bfloat16 twice: dir16 stores the values as BF16, dir32 the same values as
// F32.
func roundedCheckpoint(t *testing.T, name string) (dir16, dir32 string) {
	t.Helper()
	src := filepath.Join(sharedDir(t), "fixtures", "models", name)
	w, err := OpenWeights(src)
	if err != nil {
		t.Fatal(err)
	}
	bf, f32 := map[string]rawTensor{}, map[string]rawTensor{}
	for tname, info := range w.Tensors {
		x, err := w.Read(tname, info.Shape...)
		if err != nil {
			t.Fatal(err)
		}
		var b16 []byte
		for i, v := range x {
			bits := math.Float32bits(v)
			bits += 0x7fff + (bits>>16)&1 // round to nearest even
			b16 = binary.LittleEndian.AppendUint16(b16, uint16(bits>>16))
			x[i] = math.Float32frombits(bits &^ 0xffff)
		}
		bf[tname] = rawTensor{"BF16", info.Shape, b16}
		f32[tname] = rawTensor{"F32", info.Shape, f32Bytes(x)}
	}
	dir16, dir32 = t.TempDir(), t.TempDir()
	for dir, ts := range map[string]map[string]rawTensor{dir16: bf, dir32: f32} {
		for _, f := range []string{"config.json", "generation_config.json"} {
			data, err := os.ReadFile(filepath.Join(src, f))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		writeSafetensors(t, filepath.Join(dir, "model.safetensors"), ts)
	}
	return dir16, dir32
}

// TestDTypeFloat32Exact: --dtype float32 on a bfloat16 checkpoint gives
// exactly the logits and greedy tokens of the float32 computation of the
// same values (the fixture's weights rounded to bfloat16, stored once as
// BF16 and once as F32), so the float32 fixtures' parity with transformers
// carries over to bfloat16 checkpoints; auto on the BF16 file computes in
// bfloat16 where this machine's kernels are fast in it, else in float32,
// and says so in its fingerprint.
func TestDTypeFloat32Exact(t *testing.T) {
	ctx := context.Background()
	for _, name := range fixtureModels {
		t.Run(name, func(t *testing.T) {
			e := loadExpected(t, name)
			dir16, dir32 := roundedCheckpoint(t, name)
			open := func(dir string, mode DType) *Model {
				m, err := Open(ctx, dir, Options{DType: mode, FingerprintCache: "-", MaxBatch: 8})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { m.Close() })
				return m
			}
			bf32, ref, auto := open(dir16, DTypeFloat32), open(dir32, DTypeAuto), open(dir16, DTypeAuto)
			products := "float32"
			if fastProducts(dtypes.BFloat16, kernelFamily()) {
				products = "bfloat16"
			}
			if got := auto.Arithmetic().Products; got != products {
				t.Errorf("auto on the BF16 file computes in %s with %s kernels, want %s", got, kernelFamily(), products)
			}
			if got := bf32.Arithmetic().Products; got != "float32" {
				t.Errorf("--dtype float32 on the BF16 file computes in %s", got)
			}
			for i, p := range e.Prompts[:6] {
				want, err := ref.Logits(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				got, err := bf32.Logits(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Errorf("prompt %d (len %d): --dtype float32 on BF16 logits differ from the F32 file's", i, len(p))
				}
			}
			var reqs []backends.Request
			for i, p := range e.Prompts[:5] {
				reqs = append(reqs, backends.Request{Index: i, PromptIDs: p, MaxTokens: 64})
			}
			want, _ := collect(t, ref, reqs, nil)
			got, _ := collect(t, bf32, reqs, nil)
			for i := range reqs {
				if !slices.Equal(got[i], want[i]) {
					t.Errorf("prompt %d: greedy %v, want %v", i, got[i], want[i])
				}
			}
		})
	}
}

// distance is how far one --dtype mode is from float32 on one model.
type distance struct {
	// worst is the largest max|mode−float32| / max|float32| over the last
	// prompt logits of every prompt.
	worst float64
	// same counts prompts whose 64 greedy tokens equal float32's, first
	// those whose first token does; agree sums the tokens before the first
	// difference.
	same, first, agree, prompts int
}

// fixtureDirs lists the model folders under ../shared/fixtures/models.
func fixtureDirs(t *testing.T) []string {
	t.Helper()
	root := filepath.Join(sharedDir(t), "fixtures", "models")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join(root, e.Name(), "config.json")); e.IsDir() && err == nil {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		t.Fatalf("no fixture models in %s", root)
	}
	return names
}

// modeRun is what one --dtype mode computes on a fixture's 8 prompts: the
// last prompt logits and 64 greedy tokens of each, batched.
type modeRun struct {
	logits map[int][]float32
	ids    map[int][]int
}

// runMode runs the fixture's 8 prompts in mode, all 8 in one batch and
// then one at a time: in every mode each prompt's tokens alone must equal
// its batched tokens (TestBatchInvariance checks more compositions, and
// the logits bit for bit; TestParityGreedy checks float32's tokens against
// transformers).
func runMode(t *testing.T, name string, mode DType) modeRun {
	t.Helper()
	e := loadExpected(t, name)
	m := openFixture(t, name, Options{DType: mode, MaxBatch: 8})
	r := modeRun{logits: map[int][]float32{}}
	m.prefillHook = func(i int, l []float32) { r.logits[i] = slices.Clone(l) }
	var reqs []backends.Request
	for i, p := range e.Prompts {
		reqs = append(reqs, backends.Request{Index: i, PromptIDs: p, MaxTokens: 64})
	}
	r.ids, _ = collect(t, m, reqs, nil)
	m.prefillHook = nil
	for i, req := range reqs {
		if testing.Short() && len(req.PromptIDs) > 300 {
			continue
		}
		one, _ := collect(t, m, []backends.Request{req}, nil)
		if !slices.Equal(one[i], r.ids[i]) {
			t.Errorf("%s --dtype %s prompt %d: greedy tokens depend on the batch: alone %v, batched %v", name, mode, i, one[i], r.ids[i])
		}
	}
	return r
}

// distanceTo measures how far got is from ref.
func distanceTo(got, ref modeRun) distance {
	var d distance
	for i := range ref.ids {
		want := make([]float64, len(ref.logits[i]))
		for j, x := range ref.logits[i] {
			want[j] = float64(x)
		}
		d.worst = math.Max(d.worst, maxRelErr(got.logits[i], want))
		n := 0
		for n < len(got.ids[i]) && n < len(ref.ids[i]) && got.ids[i][n] == ref.ids[i][n] {
			n++
		}
		d.agree += n
		if n > 0 {
			d.first++
		}
		if slices.Equal(got.ids[i], ref.ids[i]) {
			d.same++
		}
		d.prompts++
	}
	return d
}

// TestDTypeDistance measures, on every fixture model, how far the
// bfloat16 and float16 modes are from float32 (the fixtures store float32:
// these modes round the weights, and the activations before each product),
// and enforces bounds: the worst relative error of the last prompt logits
// (max|mode−float32| over max|float32|, over 8 prompts of 1 to 2,000
// tokens) below 6e-2 for bfloat16 and 6e-3 for float16 (8 and 11
// significant bits: 2⁻⁹ and 2⁻¹² relative per rounding, grown through two
// layers to 2-4e-2 and 2-3e-3 on these models), and the first greedy token
// of at least 6 of the 8 prompts equal to float32's (the fixtures' top-2
// margins go down to 1e-3 logits, under bfloat16's error, so longer
// continuations part). docs/numerics.md gives the figures it logs.
func TestDTypeDistance(t *testing.T) {
	bounds := map[DType]float64{DTypeBFloat16: 6e-2, DTypeFloat16: 6e-3}
	for _, name := range fixtureDirs(t) {
		t.Run(name, func(t *testing.T) {
			ref := runMode(t, name, DTypeFloat32)
			for _, mode := range []DType{DTypeBFloat16, DTypeFloat16} {
				d := distanceTo(runMode(t, name, mode), ref)
				t.Logf("%s --dtype %s against float32: worst relative logit error %.3g; greedy over 64 tokens: %d/%d prompts identical, first token equal on %d/%d, %d/%d tokens before the first difference",
					name, mode, d.worst, d.same, d.prompts, d.first, d.prompts, d.agree, 64*d.prompts)
				if d.worst >= bounds[mode] {
					t.Errorf("--dtype %s: worst relative logit error %.3g ≥ %g", mode, d.worst, bounds[mode])
				}
				if d.first < 6 {
					t.Errorf("--dtype %s: first greedy token equal on %d/%d prompts, want ≥ 6", mode, d.first, d.prompts)
				}
			}
		})
	}
}

var updateNumerics = flag.Bool("update-numerics", false, "TestNumericsGolden: pin this kernel family's checksums in testdata/numerics.json (refused while the numerics version is unchanged and a pinned sum differs)")

// numericsGolden is testdata/numerics.json: the numerics version the sums
// were pinned under and, per kernel family (kernelFamily), per
// "model/--dtype", the checksum of the logits (numericsChecksum).
type numericsGolden struct {
	Numerics int                          `json:"numerics"`
	Sums     map[string]map[string]string `json:"sums"`
}

const numericsGoldenPath = "testdata/numerics.json"

// numericsChecksum is the SHA-256 of what the model computes in mode on
// the fixture's prompts: the float32 bits of the last logits of the first
// six prompts (1 to 600 tokens), then the 64 greedy tokens of the first
// four, batched.
func numericsChecksum(t *testing.T, name string, mode DType) string {
	t.Helper()
	e := loadExpected(t, name)
	m := openFixture(t, name, Options{DType: mode, MaxBatch: 4})
	h := sha256.New()
	for _, p := range e.Prompts[:6] {
		l, err := m.Logits(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range l {
			binary.Write(h, binary.LittleEndian, math.Float32bits(x))
		}
	}
	var reqs []backends.Request
	for i, p := range e.Prompts[:4] {
		reqs = append(reqs, backends.Request{Index: i, PromptIDs: p, MaxTokens: 64})
	}
	ids, _ := collect(t, m, reqs, nil)
	for i := range reqs {
		for _, id := range ids[i] {
			binary.Write(h, binary.LittleEndian, int32(id))
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// TestNumericsGolden pins a checksum of each fixture model's logits and
// greedy tokens in each --dtype mode on the pure-Go backend, per kernel
// family (AVX-512, AVX2 and the portable Go kernels sum in different
// orders). A change to the engine's arithmetic changes them: it must bump
// NumericsVersion (so that generations stored under the old arithmetic are
// not reused), and only then may the sums be pinned again.
func TestNumericsGolden(t *testing.T) {
	family := kernelFamily()
	var golden numericsGolden
	data, err := os.ReadFile(numericsGoldenPath)
	switch {
	case errors.Is(err, os.ErrNotExist) && *updateNumerics:
	case err != nil:
		t.Fatal(err)
	default:
		if err := json.Unmarshal(data, &golden); err != nil {
			t.Fatalf("%s: %v", numericsGoldenPath, err)
		}
	}
	pinned := golden.Sums[family]
	if golden.Numerics != NumericsVersion {
		pinned = nil
		if !*updateNumerics {
			t.Fatalf("NumericsVersion is %d but %s pins the logits of version %d: pin them with `go test ./backends/gomlx -run TestNumericsGolden -update-numerics` "+
				"under each kernel family (again with GOMLX_SIMD_AVX512=false for AVX2, and with GOMLX_SIMD_AVX512=false GOMLX_SIMD_AVX2=false for the portable kernels)",
				NumericsVersion, numericsGoldenPath, golden.Numerics)
		}
	}
	if pinned == nil && !*updateNumerics {
		t.Skipf("no checksums pinned for the kernel family %s (%s pins %d families): run with -update-numerics on this machine to pin them", family, numericsGoldenPath, len(golden.Sums))
	}
	sums := map[string]string{}
	var changed []string
	for _, name := range fixtureModels {
		for _, mode := range DTypes() {
			key := name + "/" + string(mode)
			sum := numericsChecksum(t, name, mode)
			sums[key] = sum
			if want, ok := pinned[key]; ok && want != sum {
				changed = append(changed, fmt.Sprintf("%s --dtype %s: checksum %s, pinned %s", name, mode, sum, want))
			}
		}
	}
	if len(changed) > 0 {
		t.Fatalf("the engine's arithmetic changed under numerics version %d (kernel family %s):\n\t%s\n"+
			"Bump NumericsVersion in backends/gomlx/numerics.go: stored generations made by the old arithmetic must not be reused as if the new engine had made them. "+
			"Then pin the new sums with `go test ./backends/gomlx -run TestNumericsGolden -update-numerics` (see the test's doc).",
			NumericsVersion, family, strings.Join(changed, "\n\t"))
	}
	if !*updateNumerics {
		return
	}
	if golden.Numerics != NumericsVersion || golden.Sums == nil {
		golden = numericsGolden{Numerics: NumericsVersion, Sums: map[string]map[string]string{}}
	}
	golden.Sums[family] = sums
	out, err := json.MarshalIndent(golden, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(numericsGoldenPath, append(out, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("pinned %d checksums of kernel family %s under numerics version %d", len(sums), family, NumericsVersion)
}
