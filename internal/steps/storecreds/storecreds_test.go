package storecreds

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/internal/plumbing/objectstore"
)

// TestApply: the Secret is read only when the step reaches a store, names a Secret and has no
// credentials of its own; what it read signs the requests, and a failed read fails the step.
func TestApply(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	pair := &objectstore.Credentials{AccessKey: "k", SecretKey: "s", From: "Secret team-a/mlpipeline-minio-artifact"}
	for _, c := range []struct {
		name     string
		secret   Secret
		uri      string
		env      bool
		readErr  error
		wantRead bool
		wantErr  string
	}{
		{name: "store URI, no credentials", secret: Secret{"mlpipeline-minio-artifact", "accesskey", "secretkey"}, uri: "s3://mlpipeline/private/team-a/iris.csv", wantRead: true},
		{name: "minio URI", secret: Secret{Name: "s"}, uri: "minio://mlpipeline/x.csv", wantRead: true},
		{name: "no Secret named", uri: "s3://b/k"},
		{name: "on the claim", secret: Secret{Name: "s"}, uri: "pvc://gangboost-models/models/iris/v1"},
		{name: "credentials in the environment", secret: Secret{Name: "s"}, uri: "s3://b/k", env: true},
		{name: "read fails", secret: Secret{Name: "s"}, uri: "s3://b/k", readErr: errors.New("Secret team-a/s does not exist"), wantRead: true, wantErr: "does not exist"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.env {
				t.Setenv("AWS_ACCESS_KEY_ID", "from-env")
			}
			read := false
			reader := func(_ context.Context, name, ak, sk string) (*objectstore.Credentials, error) {
				read = true
				if name != c.secret.Name || ak != c.secret.AccessKeyKey || sk != c.secret.SecretKeyKey {
					t.Errorf("read %s (%s, %s), want %+v", name, ak, sk, c.secret)
				}
				if c.readErr != nil {
					return nil, c.readErr
				}
				return pair, nil
			}
			var cfg objectstore.Config
			var log bytes.Buffer
			err := c.secret.Apply(context.Background(), reader, c.uri, &cfg, &log)
			if read != c.wantRead {
				t.Errorf("Secret read: %v, want %v", read, c.wantRead)
			}
			switch {
			case c.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || cfg.Credentials != nil {
					t.Errorf("Apply: %v, credentials %v; want an error saying %q and none", err, cfg.Credentials, c.wantErr)
				}
			case err != nil:
				t.Errorf("Apply: %v", err)
			case c.wantRead && (cfg.Credentials != pair || !strings.Contains(log.String(), "with the key pair of Secret team-a/mlpipeline-minio-artifact")):
				t.Errorf("credentials %v, log %q; want the Secret's pair, said", cfg.Credentials, log.String())
			case !c.wantRead && cfg.Credentials != nil:
				t.Errorf("credentials %v without a read", cfg.Credentials)
			}
		})
	}
	// A step that cannot read Secrets says what to do instead.
	var cfg objectstore.Config
	if err := (Secret{Name: "s"}).Apply(context.Background(), nil, "s3://b/k", &cfg, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
		t.Errorf("no reader: %v", err)
	}
}
