// Package evaltest sets up what an evaluation test needs, from the real parts: prepare-data's
// Iris split on a claim folder, a model trained on it by bin/gangboost-train, and
// bin/gangboost-runtime serving that model.
package evaltest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	claimlayout "github.com/gangboost/gangboost/internal/contract/claim"
	"github.com/gangboost/gangboost/internal/plumbing/netport"
	"github.com/gangboost/gangboost/internal/plumbing/repodir"
	"github.com/gangboost/gangboost/internal/steps/prepare"
)

// ClaimName is the claim the fixtures' model_uri names.
const ClaimName = "gangboost-models"

// Binary is bin/<name> (repodir.BinDir), failing t with the command that builds it.
func Binary(t testing.TB, name string) string {
	t.Helper()
	bin, err := repodir.BinDir()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(bin, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%v: run make build, or set %s", err, repodir.EnvBinDir)
	}
	return p
}

// Dataset prepares a data set on the claim folder (prepare-data's own code).
func Dataset(t testing.TB, claim string, o prepare.Options) *prepare.Result {
	t.Helper()
	o.Claim = claim
	if o.TestFraction == 0 {
		o.TestFraction = 0.2
	}
	res, err := prepare.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Train runs gangboost-train on a prepared split (test.csv as its evaluation set) and writes the
// model to models/<model>/v1 on the claim; it returns the model_uri.
func Train(t testing.TB, claim string, res *prepare.Result, model string, flags ...string) string {
	t.Helper()
	return TrainVersion(t, claim, res, model, "v1", flags...)
}

// TrainVersion is Train into models/<model>/<version>.
func TrainVersion(t testing.TB, claim string, res *prepare.Result, model, version string, flags ...string) string {
	t.Helper()
	uri, err := claimlayout.ModelURI(ClaimName, model, version)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--train", filepath.Join(claim, res.TrainPath), "--eval", filepath.Join(claim, res.TestPath),
		"--label", res.Schema.Label, "--nthread", "1", "--model-dir", filepath.Join(claim, filepath.FromSlash(uri.Path))}, flags...)
	cmd := exec.Command(Binary(t, "gangboost-train"), args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gangboost-train %v: %v\n%s", args, err, out)
	}
	return uri.String()
}

// FreePort is a port nobody listens on at the moment, with its next port free too, outside the
// ephemeral range (netport), and not handed to a test of this process or another before: two
// servers a test starts side by side never get the same one.
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := netport.Pick(true, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Serve starts gangboost-runtime serving modelDir as model, waits until it is live, and stops it
// when the test ends. It returns the base URL.
func Serve(t testing.TB, model, modelDir string, flags ...string) string {
	t.Helper()
	port := FreePort(t)
	args := append([]string{"--model_name", model, "--model_dir", modelDir, "--http_port", strconv.Itoa(port), "--grpc_port", "0"}, flags...)
	cmd := exec.Command(Binary(t, "gangboost-runtime"), args...)
	logf, err := os.Create(filepath.Join(t.TempDir(), "runtime.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("gangboost-runtime log:\n%s", b)
		}
	})
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(url + "/v2/health/live")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("gangboost-runtime at %s not live after 20s: %v", url, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
