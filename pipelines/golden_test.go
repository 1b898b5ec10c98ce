package pipelines

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite xgboost-volcano.yaml from the Go code")

// TestGolden: the committed package is what the code builds (go test ./pipelines -update
// rewrites it; so does make compile-pipeline).
func TestGolden(t *testing.T) {
	want, err := Compile(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("xgboost-volcano.yaml", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("xgboost-volcano.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("pipelines/xgboost-volcano.yaml differs from what the code builds; run go test ./pipelines -update (or make compile-pipeline) and review the diff")
	}
	again, err := Compile(DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, want) {
		t.Fatal("two builds of the package differ")
	}
}
