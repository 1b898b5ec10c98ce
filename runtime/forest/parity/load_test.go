//go:build cgo

package parity_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/internal/training/xgb"
	"github.com/gangboost/gangboost/runtime/forest"
	"github.com/gangboost/gangboost/runtime/forest/internal/foresttest"
)

func TestLoadFiles(t *testing.T) {
	dir := t.TempDir()
	bst, err := xgb.LoadBoosterBytes([]byte(foresttest.TinyModel))
	if err != nil {
		t.Fatal(err)
	}
	defer bst.Free()
	ubj, err := bst.ModelBytes("ubj")
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	binf, err := os.ReadFile(foresttest.Testdata(t, "tiny_pruned.bst"))
	if err != nil {
		t.Fatal(err)
	}
	// The content decides, never the name.
	for _, tc := range []struct {
		name string
		data []byte
		err  string
	}{
		{"model.json", []byte(foresttest.TinyModel), ""},
		{"model.ubj", ubj, ""},
		{"model.bst", binf, ""},
		{"model.bin", ubj, ""},
		{"model", []byte(foresttest.TinyModel), ""},
		{"MODEL.UBJ", ubj, ""},
		{"ubj.json", ubj, ""},
		{"json.ubj", []byte(foresttest.TinyModel), ""},
		{"bst.json", binf, ""},
		{"model.model", binf[4:], ""}, // binary without header
		{"truncated.ubj", ubj[:len(ubj)-9], "unexpected end of input"},
		{"truncated.bst", binf[:len(binf)-9], "binary model: offset"},
		{"empty.ubj", nil, "unexpected end of input"},
	} {
		p := write(tc.name, tc.data)
		m, err := forest.Load(p)
		if tc.err == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
				continue
			}
			got, _ := m.Predict(nil, []float32{1, 1}, 1, forest.OutputDefault)
			if got[0] != 1.25 {
				t.Errorf("%s: prediction %v, want 1.25", tc.name, got[0])
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %v, want it to name the file and contain %q", tc.name, err, tc.err)
		}
	}
	_, err = forest.Load(filepath.Join(dir, "absent.json"))
	if err == nil || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "absent.json") {
		t.Errorf("missing file: %v", err)
	}
}

// TestTruncatedModels: every prefix of real JSON and UBJSON model files is rejected
// with an error, never a panic or a model.
func TestTruncatedModels(t *testing.T) {
	bst, err := xgb.LoadBoosterBytes([]byte(foresttest.TinyModel))
	if err != nil {
		t.Fatal(err)
	}
	defer bst.Free()
	for _, format := range []string{"json", "ubj"} {
		data, err := bst.ModelBytes(format)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := forest.Parse(data); err != nil {
			t.Fatalf("%s: full file: %v", format, err)
		}
		for n := 0; n < len(data); n++ {
			if _, err := forest.Parse(data[:n]); err == nil {
				t.Fatalf("%s: prefix of %d/%d bytes parsed without error", format, n, len(data))
			}
		}
	}
}
