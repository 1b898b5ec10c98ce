package storageinit

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/internal/contract/modelobjects"
	"github.com/gangboost/gangboost/internal/plumbing/objectstore"
	"github.com/gangboost/gangboost/test/s3server"
)

// kserveEnv is the environment KServe's webhook gives a storage initializer from a service
// account's S3 secret (serving.kserve.io/s3-endpoint, s3-usehttps: "0").
func kserveEnv(t testing.TB, srv *s3server.Server, secret string) {
	t.Setenv("AWS_ACCESS_KEY_ID", s3server.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	t.Setenv("S3_ENDPOINT", strings.TrimPrefix(srv.Endpoint, "http://"))
	t.Setenv("S3_USE_HTTPS", "0")
	t.Setenv("S3_USER_VIRTUAL_BUCKET", "false")
	t.Setenv("AWS_ENDPOINT_URL", "")
	os.Unsetenv("AWS_ENDPOINT_URL")
}

func publish(t *testing.T, srv *s3server.Server, uri string, model []byte) *modeldir.Metadata {
	t.Helper()
	f, err := modelobjects.Open(uri, objectstore.Config{Endpoint: srv.Endpoint, PathStyle: true}, "test")
	if err != nil {
		t.Fatal(err)
	}
	md := &modeldir.Metadata{Objective: "multi:softprob", Producer: "job-1"}
	t.Setenv("AWS_ACCESS_KEY_ID", s3server.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3server.SecretKey)
	if err := f.Publish(context.Background(), "model.json", model, md, false); err != nil {
		t.Fatal(err)
	}
	return md
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func TestDownloadChecksTheModelAgainstItsMetadata(t *testing.T) {
	srv := s3server.Start(t)
	srv.MakeBucket(t, "models")
	model, err := os.ReadFile("../testdata/models/iris/model.json")
	if err != nil {
		t.Fatal(err)
	}
	md := publish(t, srv, "s3://models/team/iris/v1/", model)
	kserveEnv(t, srv, s3server.SecretKey)
	for _, uri := range []string{"s3://models/team/iris/v1/", "s3://models/team/iris/v1"} {
		dest := filepath.Join(t.TempDir(), "mnt", "models")
		res, err := Download(context.Background(), uri, dest, DefaultLimits, quiet)
		if err != nil {
			t.Fatalf("%s: %v", uri, err)
		}
		got, err := os.ReadFile(filepath.Join(dest, "model.json"))
		if err != nil || !bytes.Equal(got, model) {
			t.Fatalf("%s: model.json downloaded as %d bytes (%v), want the published %d", uri, len(got), err, len(model))
		}
		if !res.Verified || res.SHA256 != md.ModelSHA256 || len(res.Files) != 2 {
			t.Fatalf("%s: result %+v, want verified sha256 %s over model.json and metadata.json", uri, res, md.ModelSHA256)
		}
	}

	// One object, not a folder: downloaded under its own name.
	dest := t.TempDir()
	if _, err := Download(context.Background(), "s3://models/team/iris/v1/model.json", dest, DefaultLimits, quiet); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dest, "model.json")); !bytes.Equal(got, model) {
		t.Fatal("a single object was not downloaded as itself")
	}

	// The model object replaced behind the metadata's back: refused, naming the object and both digests.
	corrupt := append(bytes.Clone(model), ' ')
	srv.Put(t, "models", "team/iris/v1/model.json", corrupt)
	_, err = Download(context.Background(), "s3://models/team/iris/v1/", t.TempDir(), DefaultLimits, quiet)
	var de *modelobjects.DigestError
	if !errors.As(err, &de) || de.Object != "s3://models/team/iris/v1/model.json" || de.Want != md.ModelSHA256 ||
		!strings.Contains(err.Error(), de.Got) || !strings.Contains(err.Error(), md.ModelSHA256) {
		t.Fatalf("corrupt model: %v; want a DigestError naming the object and both digests", err)
	}
}

func TestDownloadRefusals(t *testing.T) {
	srv := s3server.Start(t)
	srv.MakeBucket(t, "models")
	model := []byte(`{"learner":{}}`)
	publish(t, srv, "s3://models/iris/v1/", model)
	// An upload that stopped before metadata.json, as the trainer's publisher leaves it.
	f, _ := modelobjects.Open("s3://models/iris/v2/", objectstore.Config{Endpoint: srv.Endpoint, PathStyle: true}, "test")
	if err := f.Publish(context.Background(), "model.json", model, &modeldir.Metadata{}, false); err != nil {
		t.Fatal(err)
	}
	if err := srv.Client.RemoveObject(context.Background(), "models", "iris/v2/metadata.json", minio.RemoveObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	// A folder a user wrote by hand, without metadata: downloaded, unchecked.
	srv.Put(t, "models", "hand/model.bst", []byte("booster"))

	kserveEnv(t, srv, s3server.SecretKey)
	res, err := Download(context.Background(), "s3://models/hand/", t.TempDir(), DefaultLimits, quiet)
	if err != nil || res.Verified {
		t.Errorf("a folder without metadata: %+v, %v; want it downloaded unverified", res, err)
	}
	for _, c := range []struct {
		uri, want string
		lim       Limits
	}{
		{"s3://no-such-bucket/iris/v1/", "the bucket does not exist", DefaultLimits},
		{"s3://models/iris/v9/", "no objects under this prefix", DefaultLimits},
		{"s3://models/iris/v2/", "no complete model version: model.json was written by gangboost", DefaultLimits},
		{"s3://models/iris/v1/", "more than the 10 a model may have", Limits{MaxBytes: 10, MaxObjects: 10}},
		{"s3://models/iris/v1/", "holds 2 objects, more than the 1", Limits{MaxBytes: 1 << 20, MaxObjects: 1}},
		{"gs://models/iris/v1/", "want s3://", DefaultLimits},
		{"s3://models", "want s3://", DefaultLimits},
	} {
		dest := t.TempDir()
		_, err := Download(context.Background(), c.uri, dest, c.lim, quiet)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want an error containing %q", c.uri, err, c.want)
		}
		if ents, _ := os.ReadDir(dest); len(ents) > 0 && !strings.Contains(c.want, "complete") {
			t.Errorf("%s: refused, yet %d files were written", c.uri, len(ents))
		}
	}
	kserveEnv(t, srv, "wrong")
	if _, err := Download(context.Background(), "s3://models/iris/v1/", t.TempDir(), DefaultLimits, quiet); err == nil || !strings.Contains(err.Error(), "refused the credentials") {
		t.Errorf("wrong secret: %v", err)
	}
}
