package rouge

import (
	"reflect"
	"testing"
)

// naiveTable and naiveBacktrack transcribe rouge_score's _lcs_table and
// _backtrack_norec literally; they are the oracle for bitLCS.
func naiveTable(ref, can []int32) [][]int {
	t := make([][]int, len(ref)+1)
	for i := range t {
		t[i] = make([]int, len(can)+1)
	}
	for i := 1; i <= len(ref); i++ {
		for j := 1; j <= len(can); j++ {
			if ref[i-1] == can[j-1] {
				t[i][j] = t[i-1][j-1] + 1
			} else {
				t[i][j] = max(t[i-1][j], t[i][j-1])
			}
		}
	}
	return t
}

func naiveBacktrack(ref, can []int32) []int {
	t := naiveTable(ref, can)
	var lcs []int
	i, j := len(ref), len(can)
	for i > 0 && j > 0 {
		if ref[i-1] == can[j-1] {
			lcs = append([]int{i - 1}, lcs...)
			i--
			j--
		} else if t[i][j-1] > t[i-1][j] {
			j--
		} else {
			i--
		}
	}
	return lcs
}

func toIDs(b []byte, alpha byte) []int32 {
	out := make([]int32, len(b))
	for i, c := range b {
		out[i] = int32(c % alpha)
	}
	return out
}

func checkLCS(t *testing.T, ref, can []int32) {
	t.Helper()
	var b bitLCS
	want := naiveTable(ref, can)[len(ref)][len(can)]
	if got := b.length(ref, can, 0); got != want {
		t.Fatalf("length(%v, %v) = %d, want %d", ref, can, got, want)
	}
	wantIdx := naiveBacktrack(ref, can)
	got := append([]int(nil), b.indices(ref, can, 0)...)
	for l, r := 0, len(got)-1; l < r; l, r = l+1, r-1 {
		got[l], got[r] = got[r], got[l]
	}
	if len(got) == 0 && len(wantIdx) == 0 {
		return
	}
	if !reflect.DeepEqual(got, wantIdx) {
		t.Fatalf("indices(%v, %v) = %v, want %v", ref, can, got, wantIdx)
	}
}

func TestBitLCSMatchesTable(t *testing.T) {
	tests := []struct{ ref, can string }{
		{"", ""}, {"a", ""}, {"abc", "abc"}, {"abc", "cba"}, {"abcbdab", "bdcaba"},
		{"aaaa", "aa"}, {"abab", "baba"},
	}
	for _, tt := range tests {
		checkLCS(t, toIDs([]byte(tt.ref), 255), toIDs([]byte(tt.can), 255))
	}
	// Multi-word rows: lengths around 64 and 128.
	for _, n := range []int{63, 64, 65, 127, 128, 130, 200} {
		ref := make([]byte, n)
		can := make([]byte, n+7)
		for i := range ref {
			ref[i] = byte(i*7 + i/3)
		}
		for i := range can {
			can[i] = byte(i*5 + i/2)
		}
		checkLCS(t, toIDs(ref, 3), toIDs(can, 3))
		checkLCS(t, toIDs(ref, 5), toIDs(can, 2))
	}
}

func FuzzBitLCS(f *testing.F) {
	f.Add([]byte("abcbdab"), []byte("bdcaba"), byte(4))
	f.Add([]byte{}, []byte("x"), byte(2))
	f.Add(make([]byte, 70), make([]byte, 130), byte(3))
	f.Fuzz(func(t *testing.T, a, b []byte, alpha byte) {
		if len(a) > 300 || len(b) > 300 {
			return
		}
		alpha = alpha%6 + 1
		checkLCS(t, toIDs(a, alpha), toIDs(b, alpha))
	})
}
