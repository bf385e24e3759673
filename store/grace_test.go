package store

import (
	"context"
	"testing"
	"time"
)

// TestWithGrace: the grace context outlives its parent by CommitGrace,
// no more.
func TestWithGrace(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.Background())
	g, cancel := WithGrace(parent)
	defer cancel()
	cancelParent()
	if g.Err() != nil {
		t.Fatal("cancelled with its parent")
	}
	t0 := time.Now()
	<-g.Done()
	if d := time.Since(t0); d < CommitGrace/2 {
		t.Errorf("cancelled %v after its parent, want about %v", d, CommitGrace)
	}
}
