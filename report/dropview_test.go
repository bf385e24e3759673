package report

import "testing"

// TestIsDROP: the DROP view is drawn for tasks named DROP and for any task
// scored with a DROP metric (the demo task), and for no other.
func TestIsDROP(t *testing.T) {
	for _, tc := range []struct {
		task    string
		metrics []string
		want    bool
	}{
		{"drop", []string{"em", "f1"}, true},
		{"DROP-nl", nil, true},
		{"demo", []string{"drop-fixed.em", "drop.f1"}, true},
		{"mine", []string{"drop-fixed.f1"}, true},
		{"counting_stars", []string{"counting_stars"}, false},
		{"leval_coursera", []string{"exact_match", "dropout_rate"}, false},
	} {
		if got := isDROP(&TaskData{Task: tc.task, Metrics: tc.metrics}); got != tc.want {
			t.Errorf("isDROP(%q, %v) = %v, want %v", tc.task, tc.metrics, got, tc.want)
		}
	}
}
