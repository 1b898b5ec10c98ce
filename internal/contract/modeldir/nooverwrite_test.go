package modeldir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Without replace, a published version is never replaced: the existing folder stays byte for
// byte, nothing is left beside it, and the error names the folder, its writer and the way out.
func TestPublishNeverReplacesAVersion(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "models", "iris")
	dir := filepath.Join(parent, "v1")
	if err := Publish(dir, "model.json", []byte(`{"learner":"first"}`), &Metadata{Producer: "train-a"}, false); err != nil {
		t.Fatal(err)
	}
	before := tree(t, dir)
	err := Publish(dir, "model.json", []byte(`{"learner":"second"}`), &Metadata{Producer: "train-b"}, false)
	var exists *ExistsError
	if !errors.As(err, &exists) || exists.Producer != "train-a" || exists.Dir != dir {
		t.Fatalf("second publish: %v, want an ExistsError naming %s and train-a", err, dir)
	}
	for _, want := range []string{dir, "train-a", "model_version", "overwrite"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if after := tree(t, dir); !slices.Equal(before, after) {
		t.Fatalf("the published version changed: %v, was %v", after, before)
	}
	if got := entries(t, parent); !slices.Equal(got, []string{"v1"}) {
		t.Fatalf("beside the version: %v, want no temporary folder left", got)
	}
}

// Where the filesystem has no RENAME_NOREPLACE, the rename still refuses an existing name.
func TestCheckAndRenameRefusesAnExistingName(t *testing.T) {
	a, b := filepath.Join(t.TempDir(), "a"), t.TempDir()
	if err := os.Mkdir(a, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := checkAndRename(a, b); !errors.Is(err, os.ErrExist) {
		t.Fatalf("checkAndRename onto an existing folder: %v, want ErrExist", err)
	}
	if _, err := os.Stat(a); err != nil {
		t.Fatalf("the source moved: %v", err)
	}
}

// Publishers racing for one new version: exactly one wins, every other gets an ExistsError, and
// the folder holds the winner's model whole.
func TestPublishNewRace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "models", "m", "v1")
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = Publish(dir, "model.json", []byte(fmt.Sprintf(`{"learner":%d}`, i)), &Metadata{Producer: fmt.Sprint("job-", i)}, false)
		}()
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		var exists *ExistsError
		switch {
		case err == nil && winner >= 0:
			t.Fatalf("publishers %d and %d both succeeded", winner, i)
		case err == nil:
			winner = i
		case !errors.As(err, &exists):
			t.Fatalf("publisher %d: %v, want an ExistsError", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no publisher succeeded")
	}
	md, err := ReadMetadata(dir)
	if err != nil || md.Producer != fmt.Sprint("job-", winner) {
		t.Fatalf("metadata %+v (%v), want the winner job-%d's", md, err, winner)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "model.json"))
	if string(b) != fmt.Sprintf(`{"learner":%d}`, winner) {
		t.Fatalf("model.json %q is not the winner's", b)
	}
	if got := entries(t, filepath.Dir(dir)); !slices.Equal(got, []string{"v1"}) {
		t.Fatalf("beside the version: %v", got)
	}
}

func TestCheckNew(t *testing.T) {
	root := t.TempDir()
	published := filepath.Join(root, "published")
	if err := Publish(published, "model.json", []byte("{}"), &Metadata{Producer: "job-1"}, false); err != nil {
		t.Fatal(err)
	}
	noMetadata := filepath.Join(root, "no-metadata")
	if err := os.MkdirAll(noMetadata, 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		dir, producer string
		own, exists   bool
	}{
		{filepath.Join(root, "absent"), "job-1", false, false},
		{published, "job-1", true, false},  // the same job's earlier attempt
		{published, "job-2", false, true},  // another job's model
		{published, "", false, true},       // an unnamed writer owns nothing
		{noMetadata, "job-1", false, true}, // not a published model, and not ours either
	}
	for _, c := range cases {
		own, err := CheckNew(c.dir, c.producer)
		var exists *ExistsError
		if own != c.own || errors.As(err, &exists) != c.exists || (err != nil && !c.exists) {
			t.Errorf("CheckNew(%s, %q) = %v, %v; want own %v, exists %v", filepath.Base(c.dir), c.producer, own, err, c.own, c.exists)
		}
	}
}
