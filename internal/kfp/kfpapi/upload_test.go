package kfpapi_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/internal/kfp/kfpapi"
	"github.com/gangboost/gangboost/internal/kfp/kfpapi/kfpfake"
)

const committedFile = "../../../pipelines/xgboost-volcano.yaml"

// TestPrepareUpload: the package's own name and description unless given; a package whose
// platform document KFP would drop, or that is no package, is refused before any upload.
func TestPrepareUpload(t *testing.T) {
	up, err := kfpapi.PrepareUpload(committedFile, kfpapi.PublishOptions{Namespace: "team-a", Version: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	if string(up.Package) != string(committed(t)) || up.Name != "xgboost-volcano" || !strings.HasPrefix(up.Description, "Prepares a data set") ||
		up.Namespace != "team-a" || up.Version != "v1" {
		t.Errorf("upload %q %+v", up.Name, up.PublishOptions)
	}
	up, err = kfpapi.PrepareUpload(committedFile, kfpapi.PublishOptions{Name: "iris", Description: "mine"})
	if err != nil || up.Name != "iris" || up.Description != "mine" {
		t.Errorf("given names: %+v %v", up, err)
	}

	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.yaml")
	os.WriteFile(broken, []byte(strings.Replace(string(committed(t)), "          pvcMount:\n", "          pvcMounts:\n", 1)), 0o644)
	if _, err := kfpapi.PrepareUpload(broken, kfpapi.PublishOptions{}); err == nil || !strings.Contains(err.Error(), broken+": ") ||
		!strings.Contains(err.Error(), "platform document") {
		t.Errorf("broken platform document: %v", err)
	}
	// Parses, but a task names a component the package lacks: KFP would fail the run.
	dangling := filepath.Join(dir, "dangling.yaml")
	os.WriteFile(dangling, []byte(strings.Replace(string(committed(t)), "name: comp-evaluate\n", "name: comp-evaluat\n", 1)), 0o644)
	if _, err := kfpapi.PrepareUpload(dangling, kfpapi.PublishOptions{}); err == nil || !strings.Contains(err.Error(), dangling+": ") ||
		!strings.Contains(err.Error(), "comp-evaluat") {
		t.Errorf("dangling component reference: %v", err)
	}
	if _, err := kfpapi.PrepareUpload(filepath.Join(dir, "missing.yaml"), kfpapi.PublishOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

// TestPublishedString: one line per outcome, naming the pipeline, the version and KFP's IDs.
func TestPublishedString(t *testing.T) {
	ctx := context.Background()
	srv := kfpfake.New(t)
	c := &kfpapi.Client{Host: srv.URL}
	up, err := kfpapi.PrepareUpload(committedFile, kfpapi.PublishOptions{Version: "v2"})
	if err != nil {
		t.Fatal(err)
	}
	created, err := c.Publish(ctx, up.Package, up.PublishOptions)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := created.String(), "uploaded pipeline xgboost-volcano: pipeline_id "+created.PipelineID; got != want {
		t.Errorf("created: %q, want %q", got, want)
	}
	changed := append(append([]byte(nil), up.Package...), "# changed\n"...)
	added, err := c.Publish(ctx, changed, up.PublishOptions)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := added.String(), "uploaded version v2 of pipeline xgboost-volcano: pipeline_id "+created.PipelineID+" pipeline_version_id "+added.VersionID; got != want {
		t.Errorf("added: %q, want %q", got, want)
	}
	same, err := c.Publish(ctx, changed, up.PublishOptions)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := same.String(), "pipeline xgboost-volcano already has version v2: pipeline_id "+created.PipelineID+" pipeline_version_id "+added.VersionID; got != want {
		t.Errorf("existed: %q, want %q", got, want)
	}
}
