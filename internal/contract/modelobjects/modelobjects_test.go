package modelobjects

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/internal/plumbing/objectstore"
	"github.com/gangboost/gangboost/test/s3server"
)

func TestVersionURI(t *testing.T) {
	for _, c := range []struct{ base, want, err string }{
		{"s3://models", "s3://models/iris/v1/", ""},
		{"s3://models/", "s3://models/iris/v1/", ""},
		{"s3://models/team-a/gangboost", "s3://models/team-a/gangboost/iris/v1/", ""},
		{"s3://models/team-a/gangboost/", "s3://models/team-a/gangboost/iris/v1/", ""},
		{"minio://models/x", "", "want s3://"},
		{"/models", "", "want s3://"},
		{"s3://Models/x", "", "bucket \"Models\""},
		{"s3://models/../x", "", "prefix"},
		{"s3://models/a//b", "", "prefix"},
		{"s3://", "", "no bucket"},
	} {
		got, err := VersionURI(c.base, "iris", "v1")
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("VersionURI(%q) = %q, %v; want an error containing %q", c.base, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("VersionURI(%q) = %q, %v; want %q", c.base, got, err, c.want)
		}
	}
	if _, err := VersionURI("s3://models", "../x", "v1"); err == nil {
		t.Error("a model name with .. was accepted")
	}
}

// store starts MinIO with a bucket "models" and the credentials in the environment.
func store(t *testing.T) (*s3server.Server, objectstore.Config) {
	srv := s3server.Start(t)
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	srv.MakeBucket(t, "models")
	return srv, objectstore.Config{Endpoint: srv.Endpoint, PathStyle: true}
}

func open(t *testing.T, cfg objectstore.Config, uri string) *Folder {
	t.Helper()
	f, err := Open(uri, cfg, "test")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestPublishWritesACompleteVersionOnce(t *testing.T) {
	srv, cfg := store(t)
	ctx := context.Background()
	f := open(t, cfg, "s3://models/team/iris/v1/")
	if _, err := f.CheckNew(ctx, "job-a"); err != nil {
		t.Fatalf("CheckNew of an empty prefix: %v", err)
	}
	model := []byte(`{"learner":{}}`)
	if err := f.Publish(ctx, "model.json", model, &modeldir.Metadata{Objective: "multi:softprob", Producer: "job-a"}, false); err != nil {
		t.Fatal(err)
	}
	if got := srv.Get(t, "models", "team/iris/v1/model.json"); !bytes.Equal(got, model) {
		t.Fatalf("model object %q, want %q", got, model)
	}
	md, err := f.ReadMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(model)
	if md.ModelSHA256 != hex.EncodeToString(sum[:]) || md.ModelFile != "model.json" || md.Producer != "job-a" {
		t.Fatalf("metadata %+v: want the model's sha256, model.json and producer job-a", md)
	}
	info, err := srv.Client.StatObject(ctx, "models", "team/iris/v1/model.json", minio.StatObjectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if info.UserMetadata[SHA256Meta] != md.ModelSHA256 {
		t.Errorf("model object's sha256 metadata %q, want %q", info.UserMetadata[SHA256Meta], md.ModelSHA256)
	}

	// Another job is refused, before and at publishing, and the version is unchanged.
	if _, err := f.CheckNew(ctx, "job-b"); !isExists(err, "job-a") {
		t.Fatalf("CheckNew by another job: %v, want an ExistsError naming job-a", err)
	}
	err = f.Publish(ctx, "model.json", []byte("other"), &modeldir.Metadata{Producer: "job-b"}, false)
	if !isExists(err, "job-a") {
		t.Fatalf("second publish: %v, want an ExistsError naming job-a", err)
	}
	if got := srv.Get(t, "models", "team/iris/v1/model.json"); !bytes.Equal(got, model) {
		t.Fatalf("a refused publish changed the model to %q", got)
	}
	// The same job (a retried step) may, and so may overwrite.
	if own, err := f.CheckNew(ctx, "job-a"); err != nil || !own {
		t.Fatalf("CheckNew by the writer: %v, %v; want own", own, err)
	}
	if err := f.Publish(ctx, "model.json", []byte("new"), &modeldir.Metadata{Producer: "job-b"}, true); err != nil {
		t.Fatalf("overwrite: %v", err)
	}
	if md, err := f.ReadMetadata(ctx); err != nil || md.Producer != "job-b" || string(srv.Get(t, "models", "team/iris/v1/model.json")) != "new" {
		t.Fatalf("after overwrite: %+v, %v", md, err)
	}
}

func isExists(err error, producer string) bool {
	var e *modeldir.ExistsError
	return errors.As(err, &e) && e.Producer == producer
}

// An upload that stopped between the model and its metadata (the process killed) leaves a model
// object no reader takes for a version; the same job's retry completes it, another job is told.
func TestAnInterruptedUploadIsNoVersion(t *testing.T) {
	srv, cfg := store(t)
	ctx := context.Background()
	f := open(t, cfg, "s3://models/iris/v2/")
	// What a killed publisher leaves: its model object, written the way Publish writes it.
	if err := f.put(ctx, "model.json", []byte("half"), "job-a", true); err != nil {
		t.Fatal(err)
	}
	_, err := f.ReadMetadata(ctx)
	var inc *IncompleteError
	if !errors.As(err, &inc) || !strings.Contains(err.Error(), "model.json but no metadata.json") {
		t.Fatalf("ReadMetadata of an interrupted upload: %v; want an IncompleteError naming model.json", err)
	}
	if own, err := f.CheckNew(ctx, "job-b"); err != nil || own {
		t.Fatalf("CheckNew: %v, %v; want no published version", own, err)
	}
	err = f.Publish(ctx, "model.json", []byte("b's"), &modeldir.Metadata{Producer: "job-b"}, false)
	if err == nil || !strings.Contains(err.Error(), "written by job-a") {
		t.Fatalf("publish over another job's partial upload: %v; want a refusal naming job-a", err)
	}
	if err := f.Publish(ctx, "model.json", []byte("whole"), &modeldir.Metadata{Producer: "job-a"}, false); err != nil {
		t.Fatalf("the interrupted job's retry: %v", err)
	}
	if md, err := f.ReadMetadata(ctx); err != nil || string(srv.Get(t, "models", "iris/v2/model.json")) != "whole" || md.Producer != "job-a" {
		t.Fatalf("after the retry: %+v, %v", md, err)
	}
}

// Of publishers racing for one version, exactly one wins, and the version holds the winner's
// model under the winner's metadata.
func TestRacingPublishersOneWins(t *testing.T) {
	srv, cfg := store(t)
	ctx := context.Background()
	const n = 6
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			f := open(t, cfg, "s3://models/iris/v3/")
			errs[i] = f.Publish(ctx, "model.json", []byte(fmt.Sprintf("model %d", i)), &modeldir.Metadata{Producer: fmt.Sprintf("job-%d", i)}, false)
		})
	}
	wg.Wait()
	winners := 0
	for i, err := range errs {
		switch {
		case err == nil:
			winners++
		case strings.Contains(err.Error(), "exists") || strings.Contains(err.Error(), "another job is publishing"):
		default:
			t.Errorf("publisher %d: %v", i, err)
		}
	}
	if winners != 1 {
		t.Fatalf("%d publishers won (%v), want 1", winners, errs)
	}
	md, err := open(t, cfg, "s3://models/iris/v3/").ReadMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	model := srv.Get(t, "models", "iris/v3/model.json")
	sum := sha256.Sum256(model)
	if hex.EncodeToString(sum[:]) != md.ModelSHA256 || string(model) != "model "+strings.TrimPrefix(md.Producer, "job-") {
		t.Fatalf("the version holds %q under %s's metadata (sha256 %s)", model, md.Producer, md.ModelSHA256)
	}
}

func TestBadStoreErrorsNameWhatToCheck(t *testing.T) {
	srv, cfg := store(t)
	ctx := context.Background()
	_, err := open(t, cfg, "s3://no-such-bucket/iris/v1/").CheckNew(ctx, "job")
	if err == nil || !strings.Contains(err.Error(), `bucket "no-such-bucket" does not exist`) {
		t.Errorf("missing bucket: %v", err)
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	err = open(t, cfg, "s3://models/iris/v1/").Publish(ctx, "model.json", []byte("x"), &modeldir.Metadata{}, false)
	if err == nil || !strings.Contains(err.Error(), "refused the credentials") {
		t.Errorf("wrong credentials: %v", err)
	}
	_ = srv
}
