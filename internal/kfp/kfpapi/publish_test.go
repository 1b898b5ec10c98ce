package kfpapi_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gangboost/gangboost/internal/contract/version"
	"github.com/gangboost/gangboost/internal/kfp/kfpapi"
	"github.com/gangboost/gangboost/internal/kfp/kfpapi/kfpfake"
)

// The token is the given one, else $KFP_TOKEN, else the token file's; the host must be a URL.
func TestConnect(t *testing.T) {
	saved := kfpapi.TokenFile
	kfpapi.TokenFile = filepath.Join(t.TempDir(), "token")
	t.Cleanup(func() { kfpapi.TokenFile = saved })
	t.Setenv("KFP_TOKEN", "")
	token := func(arg string) string {
		t.Helper()
		c, err := kfpapi.Connect("http://kfp", arg)
		if err != nil {
			t.Fatal(err)
		}
		return c.Token
	}
	if got := token(""); got != "" {
		t.Errorf("no token anywhere: %q", got)
	}
	os.WriteFile(kfpapi.TokenFile, []byte("from-file\n"), 0o600)
	if got := token(""); got != "from-file" {
		t.Errorf("token file: %q", got)
	}
	t.Setenv("KFP_TOKEN", "from-env")
	if got := token(""); got != "from-env" {
		t.Errorf("$KFP_TOKEN over the file: %q", got)
	}
	if got := token("from-flag"); got != "from-flag" {
		t.Errorf("the flag over $KFP_TOKEN: %q", got)
	}
	for host, want := range map[string]string{"": "--host is required", "localhost:8080": "want an http:// or https:// URL"} {
		if _, err := kfpapi.Connect(host, ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Connect(%q) = %v, want %q", host, err, want)
		}
	}
}

// Publish creates the pipeline, then adds versions named by the package's hash; the same
// package again is the version it already is.
func TestPublish(t *testing.T) {
	ctx := context.Background()
	srv := kfpfake.New(t)
	c := &kfpapi.Client{Host: srv.URL}
	pkg := committed(t)
	o := kfpapi.PublishOptions{Name: "xgboost-volcano", Description: "d", Namespace: "team-a"}
	pub, err := c.Publish(ctx, pkg, o)
	if err != nil || !pub.Created || pub.PipelineID == "" {
		t.Fatalf("first publish = %+v, %v", pub, err)
	}
	changed := append(append([]byte(nil), pkg...), "# changed\n"...)
	again, err := c.Publish(ctx, changed, o)
	if err != nil || again.Created || again.Existed || again.PipelineID != pub.PipelineID || !strings.HasPrefix(again.Version, version.Version+"-") || len(again.Version) != len(version.Version)+13 {
		t.Fatalf("changed package = %+v, %v", again, err)
	}
	same, err := c.Publish(ctx, changed, o)
	if err != nil || !same.Existed || same.VersionID != again.VersionID {
		t.Fatalf("same package again = %+v, %v", same, err)
	}
	ps := srv.Pipelines()
	if len(ps) != 1 || len(ps[0].Versions) != 2 || ps[0].Versions[1].FileName != "xgboost-volcano.yaml" || ps[0].Namespace != "team-a" {
		t.Errorf("server holds %+v", ps)
	}
	if got := c.PipelineURL(pub.PipelineID); got != srv.URL+"/#/pipelines/details/"+pub.PipelineID {
		t.Errorf("PipelineURL = %s", got)
	}
}

// A pipeline created by someone else between Publish's lookup and its upload gets the package
// as a version.
func TestPublishAfterARace(t *testing.T) {
	ctx := context.Background()
	srv := kfpfake.New(t)
	pkg := committed(t)
	target, _ := url.Parse(srv.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var once sync.Once
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/apis/v2beta1/pipelines/upload" {
			once.Do(func() {
				other := &kfpapi.Client{Host: srv.URL}
				if _, err := other.UploadPipeline(ctx, "x.yaml", pkg, kfpapi.UploadOptions{Name: "xgboost-volcano"}); err != nil {
					t.Error(err)
				}
			})
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	c := &kfpapi.Client{Host: front.URL}
	pub, err := c.Publish(ctx, pkg, kfpapi.PublishOptions{Name: "xgboost-volcano", Version: "v2"})
	if err != nil || pub.Created || pub.Version != "v2" || pub.VersionID == "" {
		t.Fatalf("publish after a race = %+v, %v", pub, err)
	}
	if ps := srv.Pipelines(); len(ps) != 1 || len(ps[0].Versions) != 2 {
		t.Errorf("server holds %+v", ps)
	}
}

// StartRun names a missing pipeline with a typed error, and runs the newest version by default.
func TestStartRun(t *testing.T) {
	ctx := context.Background()
	srv := kfpfake.New(t)
	c := &kfpapi.Client{Host: srv.URL}
	_, err := c.StartRun(ctx, kfpapi.RunOptions{Pipeline: "xgboost-volcano"})
	var none *kfpapi.NoPipelineError
	if !errors.As(err, &none) || err.Error() != "no pipeline named xgboost-volcano on "+srv.URL+" (none shared; one uploaded into a profile is found with --namespace)" {
		t.Fatalf("run before upload: %v", err)
	}
	if _, err := c.Publish(ctx, committed(t), kfpapi.PublishOptions{Name: "xgboost-volcano"}); err != nil {
		t.Fatal(err)
	}
	r, err := c.StartRun(ctx, kfpapi.RunOptions{Pipeline: "xgboost-volcano", Params: []string{"workers=3"}})
	if err != nil {
		t.Fatal(err)
	}
	runs := srv.Runs()
	if len(runs) != 1 || runs[0]["run_id"] != r.RunID || !strings.HasPrefix(runs[0]["display_name"].(string), "xgboost-volcano ") {
		t.Errorf("runs %+v", runs)
	}
	if _, err := c.StartRun(ctx, kfpapi.RunOptions{Pipeline: "xgboost-volcano", Params: []string{"workers=many"}}); err == nil || !strings.Contains(err.Error(), `"many" is not an integer`) {
		t.Errorf("untyped parameter: %v", err)
	}
}
