package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"tally/datasets"
	"tally/scoring/stats"
	"tally/store"
)

// hostile is a generation that tries to run script in the report.
const hostile = `</script><script>document.body.setAttribute('data-pwned','1')</script><img src=x onerror="document.body.setAttribute('data-pwned','2')">`

// fixtureStore builds a store with a DROP-like task scored under two stop
// settings (one sample's output hostile, one failed) and a Counting-Stars
// task, as tally run would leave them.
func fixtureStore(t testing.TB, dropN int) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.StartRun(ctx, store.Run{Command: "run", Model: "org/model", Fingerprint: "fp1", Config: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	var samples []store.Sample
	var gens []store.Generation
	var scores []store.Score
	golds := [][]string{{"12.5"}, {"3"}, {"May 1990"}, {"the Bears"}}
	for i := range dropN {
		id := fmt.Sprint(i)
		refs, _ := json.Marshal([][]string{golds[i%len(golds)]})
		samples = append(samples, store.Sample{Task: "drop", ID: id, Prompt: "Passage " + id + " <b>bold</b>\nQuestion?", Refs: refs, Metadata: json.RawMessage(`{}`)})
		text := golds[i%len(golds)][0] + ".\nMore text"
		finish, errText := "eos", ""
		switch i {
		case 1:
			text = hostile
		case 2:
			text, finish, errText = "", "error", "backend: connection reset"
		}
		key := "k" + id
		gens = append(gens, store.Generation{Key: key, Fingerprint: "fp1", Task: "drop", SampleID: id, Text: text, Finish: finish, Error: errText, Budget: 32, Stops: json.RawMessage(`{}`)})
		if finish == "error" {
			continue // a failed generation has no scores, as tally run stores it
		}
		for _, set := range []struct{ name, key string }{{"dot", "."}, {"nl", "\n"}} {
			pred := text
			if j := strings.Index(text, set.key); j >= 0 {
				pred = text[:j]
			}
			em := 0.0
			if pred == golds[i%len(golds)][0] {
				em = 1
			}
			for m, v := range map[string]float64{"em": em, "f1": em} {
				scores = append(scores, store.Score{GenKey: key, Task: "drop", SampleID: id, Setting: set.name, SettingKey: set.key, Budget: 32, Metric: m, Value: v, Prediction: pred})
			}
		}
	}
	for j, size := range []int{1000, 2000, 4000, 8000} {
		id := fmt.Sprint("EN-Acquisition-8-", size)
		samples = append(samples, store.Sample{Task: "counting_stars", ID: id, Prompt: "stars...", Refs: json.RawMessage(`[1,2,3,4,5,6,7,8]`),
			Metadata: json.RawMessage(fmt.Sprintf(`{"lang":"EN","test_type":"Acquisition","m":8,"context_size":%d}`, size))})
		found := []int{1, 2, 3, 4, 5, 6, 7, 8}[:8-2*j]
		b, _ := json.Marshal(map[string]any{"little_penguin": found})
		key := "cs" + id
		gens = append(gens, store.Generation{Key: key, Fingerprint: "fp1", Task: "counting_stars", SampleID: id, Text: string(b), Finish: "eos", Budget: 128, Stops: json.RawMessage(`{}`)})
		scores = append(scores, store.Score{GenKey: key, Task: "counting_stars", SampleID: id, Setting: "none", Budget: 128, Metric: "counting_stars", Value: float64(len(found)) / 8, Prediction: string(b)})
	}
	if err := st.PutSamples(ctx, samples); err != nil {
		t.Fatal(err)
	}
	if err := st.PutGenerations(ctx, gens, scores); err != nil {
		t.Fatal(err)
	}
	return st
}

func writeFixtureReport(t *testing.T, dropN int) (string, *Dataset) {
	t.Helper()
	st := fixtureStore(t, dropN)
	ds, err := Load(context.Background(), st, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, ds); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, ds
}

func TestLoadDataset(t *testing.T) {
	st := fixtureStore(t, 8)
	ds, err := Load(context.Background(), st, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Tasks) != 2 || ds.Tasks[0].Task != "counting_stars" || ds.Tasks[1].Task != "drop" {
		t.Fatalf("tasks %+v", ds.Tasks)
	}
	drop := ds.Tasks[1]
	if len(drop.Columns) != 2 || drop.Columns[0].Label != "org/model dot=." || len(drop.Samples) != 8 {
		t.Fatalf("drop columns %+v, %d samples", drop.Columns, len(drop.Samples))
	}
	s0 := drop.Samples[0]
	if s0.ID != "0" || s0.Under[0].Cut != 2 || s0.Under[1].Cut != 5 || s0.Under[1].Seq != "\n" {
		t.Errorf("sample 0 cuts: dot %+v nl %+v", s0.Under[0], s0.Under[1])
	}
	// Rows: em and f1, two settings each; the second is paired with the first.
	if len(drop.Rows) != 4 || drop.Rows[1].Diff == nil || drop.Rows[0].Diff != nil {
		t.Errorf("rows %+v", drop.Rows)
	}
	filtered, err := Load(context.Background(), st, store.Filter{Tasks: []string{"drop"}, Settings: []string{"nl"}})
	if err != nil || len(filtered.Tasks) != 1 || len(filtered.Tasks[0].Columns) != 1 {
		t.Fatalf("filtered: %+v %v", filtered, err)
	}
	dv := makeDropView(drop)
	if dv.Samples != 8 || dv.FloatShare != 0.25 {
		t.Errorf("drop view %+v", dv)
	}
}

func TestAnswerType(t *testing.T) {
	for _, tc := range []struct {
		spans []string
		want  string
	}{{[]string{"12.5"}, "number"}, {[]string{"1,200"}, "number"}, {[]string{"May 1990"}, "date"}, {[]string{"3 June 2001"}, "date"},
		{[]string{"the Bears"}, "span"}, {[]string{"a", "b"}, "span"}, {nil, "span"}} {
		if got := answerType(tc.spans); got != tc.want {
			t.Errorf("answerType(%q) = %s, want %s", tc.spans, got, tc.want)
		}
	}
}

// TestGoldType (issue 33): the DROP view types a gold answer as DROP's
// gold does, from the sample's note (a year alone is a date, though its
// text reads as a number), and from its text only for a sample stored
// without it.
func TestGoldType(t *testing.T) {
	for _, tc := range []struct {
		meta  string
		spans []string
		want  string
	}{
		{"date", []string{"2017"}, "date"},
		{"number", []string{"2017"}, "number"},
		{"spans", []string{"a", "b"}, "span"},
		{"span", []string{"12"}, "span"},
		{"", []string{"2017"}, "number"},
		{"other", []string{"May 1990"}, "date"},
	} {
		if got := goldType(tc.meta, tc.spans); got != tc.want {
			t.Errorf("goldType(%s, %q) = %s, want %s", tc.meta, tc.spans, got, tc.want)
		}
	}
}

func TestWriteHTML(t *testing.T) {
	path, _ := writeFixtureReport(t, 8)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{`<svg class="chart means"`, `<svg class="chart diffs"`, `<svg class="chart heatmap"`, "predictions cut by", "25.0%"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(page, "data-pwned") || strings.Contains(page, "<img src=x") {
		t.Error("hostile output reached the page unencoded")
	}
	if regexp.MustCompile(`(?i)https?://`).FindAllString(strings.ReplaceAll(page, "http://www.w3.org/2000/svg", ""), -1) != nil {
		t.Error("report refers to the network")
	}
}

// chromium returns the headless browser's path, or "" when none is
// installed.
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func chromiumArgs(t *testing.T) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--user-data-dir=" + t.TempDir(), "--virtual-time-budget=10000"}
}

// TestHTMLInChromium opens the report in headless Chromium: the script
// loads the samples without error, the charts render, the hostile output
// shows as text, and a screenshot is saved (TALLY_SCREENSHOT_DIR, or the
// test's temporary directory).
func TestHTMLInChromium(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("skipped: no chromium on PATH (apt-get install chromium; .ci/run installs it)")
	}
	path, _ := writeFixtureReport(t, 120)
	url := "file://" + path + "#open"
	dom, err := exec.Command(bin, append(chromiumArgs(t), "--dump-dom", url)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	d := string(dom)
	if strings.Contains(d, `data-errors=`) {
		m := regexp.MustCompile(`(?s)<div id="js-errors"[^>]*>(.*?)</div>`).FindStringSubmatch(d)
		t.Fatalf("script errors: %v", m)
	}
	for _, want := range []string{`data-ready="1"`, `data-rendered="50"`, `data-total="124"`, `class="chart means"`, `class="chart heatmap"`,
		`&lt;/script&gt;&lt;script&gt;document`, `&lt;img src=x onerror="document`, `class="cut"`} {
		if !strings.Contains(d, want) {
			t.Errorf("rendered page lacks %q", want)
		}
	}
	if strings.Contains(d, `data-pwned="`) {
		t.Error("hostile output ran as script")
	}
	dir := os.Getenv("TALLY_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	shot := filepath.Join(dir, "report.png")
	cmd := exec.Command(bin, append(chromiumArgs(t), "--screenshot="+shot, "--window-size=1280,2600", url)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	if st, err := os.Stat(shot); err != nil || st.Size() < 10000 {
		t.Fatalf("screenshot %s: %v", shot, err)
	}
	t.Logf("screenshot: %s", shot)
}

// dumpDOM opens a page in headless Chromium and returns the DOM once its
// script has run (a script error fails the test).
func dumpDOM(t *testing.T, bin, url string) string {
	t.Helper()
	dom, err := exec.Command(bin, append(chromiumArgs(t), "--dump-dom", url)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v", url, err)
	}
	d := string(dom)
	if strings.Contains(d, `data-errors=`) {
		m := regexp.MustCompile(`(?s)<div id="js-errors"[^>]*>(.*?)</div>`).FindStringSubmatch(d)
		t.Fatalf("script errors: %v", m)
	}
	return d
}

// TestHTMLForResearchers is issue 22's findings on the HTML page, in
// headless Chromium: the "failed" filter shows the failed sample (it found
// nothing: failed generations were not in the page), with its reason;
// line breaks in continuations show as a visible mark, gold answers as
// text, and score chips name their metric.
func TestHTMLForResearchers(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("skipped: no chromium on PATH (apt-get install chromium; .ci/run installs it)")
	}
	path, _ := writeFixtureReport(t, 12)
	d := dumpDOM(t, bin, "file://"+path+"#failed&open")
	for _, want := range []string{`data-total="1"`, `data-rendered="1"`, `data-failed="1"`, "failed: backend error: backend: connection reset"} {
		if !strings.Contains(d, want) {
			t.Errorf("failed filter: page lacks %q", want)
		}
	}
	if strings.Contains(d, `data-failed="0"`) {
		t.Error("failed filter shows a sample that did not fail")
	}
	d = dumpDOM(t, bin, "file://"+path+"#task=drop&open")
	for _, want := range []string{
		`<span class="ws">↵</span>`,                               // the "\n" of "12.5.\nMore text"
		`<ol class="gold"><li>12.5</li></ol>`,                     // gold answer as text, not JSON
		`<span class="m">em</span>`,                               // chips named by metric
		`<td class="pred">the<span class="ws">·</span>Bears</td>`, // a space in a prediction is visible
	} {
		if !strings.Contains(d, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestIntervalChart: intervals are drawn within the metric's range (a
// proportion's interval past 1 is clipped, its end drawn open, the true
// interval in the tooltip), and the axis has a title.
func TestIntervalChart(t *testing.T) {
	svg := string(intervalChart("means", []string{"a", "b"}, []stats.Interval{{Estimate: 0.9, Low: 0.7, High: 1.1}, {Estimate: 0.5, Low: 0.4, High: 0.6}},
		axis{0, 1}, "em: mean and 95% interval"))
	if !strings.Contains(svg, `class="axis-title"`) || !strings.Contains(svg, "em: mean and 95% interval") {
		t.Errorf("no axis title: %s", svg)
	}
	if !strings.Contains(svg, `class="ci clipped"`) || !strings.Contains(svg, "95% CI [0.7000, 1.1000]") || strings.Count(svg, `class="clip"`) != 1 {
		t.Errorf("interval past 1 not clipped: %s", svg)
	}
	right := axis{0, 1}.x(1)
	for _, m := range regexp.MustCompile(`x[12]="([0-9.]+)"`).FindAllStringSubmatch(svg, -1) {
		var x float64
		fmt.Sscan(m[1], &x)
		if x > right+0.05 {
			t.Errorf("drawn at x=%v, past the axis end %v", x, right)
		}
	}
	// Through the page: a task whose proportion interval passes 1.
	ds := &Dataset{Tasks: []*TaskData{{Task: "t", Metrics: []string{"em"}, Columns: []Column{{Label: "m dot"}},
		Rows: []Row{{Task: "t", Metric: "em", Setting: "m dot", N: 3, Mean: Interval{0.9, 0.7, 1.1}}}}}}
	var b bytes.Buffer
	if err := WriteHTML(&b, ds); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `class="ci clipped"`) {
		t.Error("page draws a proportion's interval past 1")
	}
}

// TestHTMLPagedData is issue 23's scale finding for the page (a 20 MB page
// whose samples were one inlined blob, decoded whole before anything
// showed): the samples are in chunks of chunkItems decoded when a page of
// the browser shows them, and the page is built one task at a time (a
// task's samples are dropped once it is written).
func TestHTMLPagedData(t *testing.T) {
	st := fixtureStore(t, 250)
	var held []*TaskData
	var page bytes.Buffer
	b := newPageBuilder("t")
	if _, err := LoadEach(context.Background(), st, store.Filter{}, LoadOptions{}, func(td *TaskData) error {
		for _, h := range held {
			if h.Samples != nil {
				t.Errorf("task %s still holds its samples while %s is written", h.Task, td.Task)
			}
		}
		held = append(held, td)
		b.addTask(td)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := b.write(&page); err != nil {
		t.Fatal(err)
	}
	items := 250 + 4
	if n := strings.Count(page.String(), `<script type="application/octet-stream" id="c`); n != (items+chunkItems-1)/chunkItems {
		t.Errorf("%d data chunks for %d items, want %d", n, items, (items+chunkItems-1)/chunkItems)
	}
	bin := chromium()
	if bin == "" {
		t.Skip("no chromium on PATH: the page's paging is not opened")
	}
	path := filepath.Join(t.TempDir(), "p.html")
	os.WriteFile(path, page.Bytes(), 0o644)
	d := dumpDOM(t, bin, "file://"+path+"#page=5&task=drop")
	if !strings.Contains(d, `data-total="250"`) || !strings.Contains(d, `data-rendered="50"`) || !strings.Contains(d, "<b>200</b>") {
		t.Errorf("page 5 of drop does not show samples 200-249: %s", regexp.MustCompile(`data-(total|rendered)="\d+"`).FindAllString(d, -1))
	}
}

// TestHTMLNoDataRows: the store-wide page, which reads samples without
// their data rows (LoadOptions.NoDataRows), is byte for byte the page of
// the samples loaded whole; a sample stored with no metadata of its own
// is then read without its data row, target and index, one with metadata
// keeps its metadata (and, read whole, its data row).
func TestHTMLNoDataRows(t *testing.T) {
	ctx := context.Background()
	st := fixtureStore(t, 40)
	var samples []store.Sample
	for i := range 40 {
		target := fmt.Sprint(" answer ", i)
		x := datasets.Stored{ShareKey: fmt.Sprint("k", i), Index: &i, Doc: json.RawMessage(fmt.Sprintf(`{"passage":"p%d","target":"t"}`, i)), Target: &target}
		if i%3 == 0 {
			x.Metadata = map[string]any{"lang": "en", "n": float64(i)}
		}
		meta, err := json.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		refs, _ := json.Marshal([][]string{{fmt.Sprint(i)}})
		samples = append(samples, store.Sample{Task: "drop", ID: fmt.Sprint(i), Prompt: fmt.Sprint("Passage ", i, "\nQuestion?"), Refs: refs, Metadata: meta})
	}
	if err := st.PutSamples(ctx, samples); err != nil {
		t.Fatal(err)
	}
	whole, err := Load(ctx, st, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	whole.Title = "t"
	var want, got bytes.Buffer
	if err := WriteHTML(&want, whole); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteHTMLStore(ctx, &got, st, store.Filter{}, "t", LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("the store-wide page (%d bytes) is not the page of the samples loaded whole (%d bytes)", got.Len(), want.Len())
	}
	cut, err := LoadWith(ctx, st, store.Filter{}, LoadOptions{NoDataRows: true})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for ti, td := range cut.Tasks {
		if td.Task != "drop" {
			continue
		}
		for si, sd := range td.Samples {
			w := whole.Tasks[ti].Samples[si]
			var i int
			fmt.Sscan(sd.ID, &i)
			hasMeta := i%3 == 0
			if hasMeta && (sd.Doc == nil || sd.Index != i || string(sd.Metadata) != string(w.Metadata) || sd.Metadata == nil) ||
				!hasMeta && (sd.Doc != nil || sd.Target != nil || sd.Metadata != nil) || w.Doc == nil || w.Index != i {
				t.Errorf("sample %s read without data rows: doc %s target %v index %d metadata %s; whole: doc %s index %d",
					sd.ID, sd.Doc, sd.Target, sd.Index, sd.Metadata, w.Doc, w.Index)
			}
			seen++
		}
	}
	if seen != 40 {
		t.Errorf("%d drop samples, want 40", seen)
	}
}
