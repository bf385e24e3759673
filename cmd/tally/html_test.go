package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"tally/internal/sharedtest"
)

// chromiumBin is the headless browser's path, or "".
func chromiumBin() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func chromiumFlags(t *testing.T) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--user-data-dir=" + t.TempDir(), "--virtual-time-budget=10000", "--hide-scrollbars"}
}

// TestDROPReportInChromium is issue 22's finding on the HTML page, end to
// end: a multi-setting DROP run on the demo model with failed samples (21
// of 40 prompts exceed its context), reported from the store alone as
// HTML (with a run of the demo task beside it) and opened in headless
// Chromium: the "failed" filter shows the 21 failed samples and nothing
// else, each with its reason. Screenshots (the
// charts, the failed samples, opened samples with their whitespace marks)
// go to $TALLY_SCREENSHOT_DIR, else the test's temporary directory.
func TestDROPReportInChromium(t *testing.T) {
	bin := chromiumBin()
	if bin == "" {
		t.Skip("skipped: no chromium on PATH (apt-get install chromium; .ci/run installs it)")
	}
	data := sharedtest.Path(t, "data/drop/drop_dataset_dev.subset.json")
	dir := t.TempDir()
	db := filepath.Join(dir, "d.db")
	runJSON(t, "run", "--model", "demo", "--tasks", "drop", "--data", data, "--set", "fewshot=0", "--stop", "dot=.", "--stop", `nl=\n`,
		"--stop", "sp= ", "--store", db)
	// The demo task beside it: the same settings where the model answers,
	// so that samples change between settings.
	runJSON(t, "run", "--model", "demo", "--tasks", "demo", "--stop", "dot=.", "--stop", `nl=\n`, "--stop", "sp= ", "--store", db)
	page := filepath.Join(dir, "report.html")
	if err := os.WriteFile(page, []byte(runJSON(t, "report", "--store", db, "--format", "html")), 0o644); err != nil {
		t.Fatal(err)
	}
	dump := func(hash string) string {
		out, err := exec.Command(bin, append(chromiumFlags(t), "--dump-dom", "file://"+page+hash)...).Output()
		if err != nil {
			t.Fatalf("chromium: %v", err)
		}
		d := string(out)
		if strings.Contains(d, "data-errors=") {
			t.Fatalf("script errors: %s", regexp.MustCompile(`(?s)<div id="js-errors"[^>]*>(.*?)</div>`).FindString(d))
		}
		return d
	}
	d := dump("#failed&open")
	if !strings.Contains(d, `data-total="21"`) || !strings.Contains(d, `data-rendered="21"`) || strings.Count(d, `data-failed="1"`) != 21 ||
		strings.Contains(d, `data-failed="0"`) || strings.Count(d, "exceeds the model's context") < 21 {
		t.Errorf("failed filter does not show the 21 failed samples (and only them): total %s",
			regexp.MustCompile(`data-total="\d+"`).FindString(d))
	}
	if all := dump(""); !strings.Contains(all, `data-total="80"`) || !strings.Contains(all, `class="axis-title"`) {
		t.Errorf("full page: %s", regexp.MustCompile(`data-total="\d+"`).FindString(all))
	}
	shots := os.Getenv("TALLY_SCREENSHOT_DIR")
	if shots == "" {
		shots = t.TempDir()
	}
	for name, spec := range map[string]struct{ hash, size string }{
		"drop-report-charts.png":  {"", "1280,2400"},
		"drop-report-failed.png":  {"#failed&open&only=browser", "1280,1600"},
		"drop-report-samples.png": {"#changed&open&only=browser&task=demo", "1280,2400"},
	} {
		shot := filepath.Join(shots, name)
		cmd := exec.Command(bin, append(chromiumFlags(t), "--screenshot="+shot, "--window-size="+spec.size, "file://"+page+spec.hash)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("chromium --screenshot: %v\n%s", err, out)
		}
		if st, err := os.Stat(shot); err != nil || st.Size() < 10000 {
			t.Fatalf("screenshot %s: %v", shot, err)
		}
		t.Logf("screenshot: %s", shot)
	}
}
