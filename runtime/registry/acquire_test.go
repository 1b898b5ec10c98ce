package registry

import "testing"

// TestReleasedVersionIsNotTakenUp: a version whose last reference is gone (a reload replaced
// it and its requests finished) is never referenced again, so a request that read it just
// before the swap reads the serving one instead; a live version takes references.
func TestReleasedVersionIsNotTakenUp(t *testing.T) {
	released := 0
	l := &Loaded{release: func() { released++ }}
	l.refs.Store(1) // the model's own
	if !l.ref() || l.refs.Load() != 2 {
		t.Fatalf("live version: ref refused or refs %d, want 2", l.refs.Load())
	}
	l.Release()
	l.Release()
	if released != 1 {
		t.Fatalf("released %d times after the last reference, want 1", released)
	}
	if l.ref() || l.refs.Load() != 0 {
		t.Fatalf("a released version took a reference (refs %d)", l.refs.Load())
	}
}
