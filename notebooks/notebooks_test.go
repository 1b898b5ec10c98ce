// Package notebooks executes the notebooks in this folder, as a data scientist would run them in
// a Kubeflow notebook, against a gangboost-runtime the test starts: a failing cell fails the test.
package notebooks

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gangboost/gangboost/test/evaltest"
	"github.com/gangboost/gangboost/test/nbrun"
	"github.com/gangboost/gangboost/test/testbin"
)

// startRuntime serves the iris model on a free port and returns its base URL.
func startRuntime(t *testing.T) string {
	t.Helper()
	port := evaltest.FreePort(t)
	cmd := exec.Command(testbin.Installed(t, "gangboost-runtime"), "--model_name", "iris",
		"--model_dir", filepath.Join(testbin.Root(t), "runtime", "testdata", "models", "iris"),
		"--http_port", strconv.Itoa(port), "--grpc_port", "0")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start gangboost-runtime (make build): %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	for deadline := time.Now().Add(time.Minute); ; { // a hang guard: ready within a second
		if r, err := http.Get(url + "/v2/health/ready"); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return url
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("gangboost-runtime not ready after a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestPredictNotebook runs predict.ipynb as a user would reach the model: straight at the runtime
// (make demo, port-forward), from a notebook pod in the cluster behind an authorization policy
// (a cluster Service's address, the service-account token from its file), and through
// an ingress gateway that routes by Host and wants a bearer token.
func TestPredictNotebook(t *testing.T) {
	nbrun.Require(t)
	url := startRuntime(t)
	const token = "eyJhbGciOiJSUzI1NiJ9.gangboost-test-token"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		// gateHost, when set, puts an authGate for that host in front of the runtime.
		gateHost string
		env      func(gate string) []string
		shows    string
	}{
		{"direct", "", func(string) []string { return []string{"GANGBOOST_ENDPOINT=" + url} }, "bearer token: none | Host: the endpoint's"},
		// A cluster Service's address (what the notebook reads from the InferenceService's status
		// in a pod, test/cluster/serving's TestPredictNotebookInProfile) and the pod's
		// service-account token from its file: the gate, as the HTTP proxy, stands where cluster
		// DNS and the predictor's sidecar would.
		{"in cluster, service-account token", "iris-v1-predictor.team-a.svc.cluster.local", func(gate string) []string {
			return []string{"GANGBOOST_ENDPOINT=http://iris-v1-predictor.team-a.svc.cluster.local", "GANGBOOST_TOKEN_PATH=" + tokenFile,
				"http_proxy=" + gate, "HTTP_PROXY=" + gate, "no_proxy=", "NO_PROXY="}
		}, "http://iris-v1-predictor.team-a.svc.cluster.local iris\nbearer token: " + tokenFile},
		{"ingress gateway, token and Host", "iris.team-a.example.com", func(gate string) []string {
			return []string{"GANGBOOST_ENDPOINT=" + gate, "GANGBOOST_TOKEN=" + token, "GANGBOOST_HOST_HEADER=iris.team-a.example.com"}
		}, "bearer token: GANGBOOST_TOKEN | Host: iris.team-a.example.com"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var gate *authGate
			gateURL := ""
			if c.gateHost != "" {
				gate = startAuthGate(t, url, c.gateHost, token)
				gateURL = gate.url
			}
			out := filepath.Join(t.TempDir(), "predict.executed.ipynb")
			if keep := os.Getenv("GANGBOOST_KEEP_NOTEBOOKS"); keep != "" {
				out = filepath.Join(keep, "predict."+strings.ReplaceAll(c.name, " ", "_")+".executed.ipynb") // to look at what it shows
			}
			cmd := nbrun.Command(filepath.Join(testbin.Root(t), "notebooks", "predict.ipynb"), out, t.TempDir())
			cmd.Env = append(append(os.Environ(), "GANGBOOST_MODEL=iris",
				"GANGBOOST_MODEL_METADATA="+filepath.Join(testbin.Root(t), "runtime", "testdata", "models", "iris", "metadata.json"),
				"MPLBACKEND=module://matplotlib_inline.backend_inline"), c.env(gateURL)...)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("notebook failed: %v\n%s", err, b)
			}
			shown := nbrun.OutputsText(t, out)
			for _, want := range []string{c.shows, "binary and JSON answers agree", "setosa", "image/png", "shape [1 5] has 5 features per row"} {
				if !strings.Contains(shown, want) {
					t.Errorf("executed notebook's outputs lack %q:\n%s", want, shown)
				}
			}
			if strings.Contains(shown, token) {
				t.Error("the executed notebook shows the bearer token")
			}
			if gate != nil && gate.passed.Load() == 0 {
				t.Error("no call of the notebook went through the auth gate")
			}
		})
	}
}

// authGate stands where Kubeflow's auth stands in front of an InferenceService (Istio's
// RequestAuthentication and AuthorizationPolicy at the ingress gateway or the predictor's
// sidecar): a call reaches the runtime only for the host it routes and with the bearer token;
// otherwise it gets Istio's answers, 404 for another host, 401 without a token, 403 with another.
type authGate struct {
	url, host, token string
	proxy            *httputil.ReverseProxy
	passed           atomic.Int64
}

func (g *authGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	switch {
	case r.Host != g.host:
		http.Error(w, "no route for host "+r.Host, http.StatusNotFound)
	case auth == "":
		http.Error(w, "Jwt is missing", http.StatusUnauthorized)
	case auth != "Bearer "+g.token:
		http.Error(w, "RBAC: access denied", http.StatusForbidden)
	default:
		g.passed.Add(1)
		g.proxy.ServeHTTP(w, r)
	}
}

// startAuthGate serves an authGate for host in front of backend, and checks that it refuses
// what it must before the notebook relies on it.
func startAuthGate(t *testing.T, backend, host, token string) *authGate {
	t.Helper()
	target, err := neturl.Parse(backend)
	if err != nil {
		t.Fatal(err)
	}
	g := &authGate{host: host, token: token, proxy: &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target) // origin-form (a gateway) and absolute-form (an HTTP proxy) requests alike
	}}}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	g.url = srv.URL
	for _, c := range []struct {
		host, auth string
		want       int
	}{
		{host, "", http.StatusUnauthorized},
		{host, "Bearer not-" + token, http.StatusForbidden},
		{"elsewhere.example.com", "Bearer " + token, http.StatusNotFound},
		{host, "Bearer " + token, http.StatusOK},
	} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/v2/health/ready", nil)
		req.Host = c.host
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Fatalf("auth gate: Host %s, Authorization %q: status %d, want %d", c.host, c.auth, resp.StatusCode, c.want)
		}
	}
	g.passed.Store(0)
	return g
}

// The committed notebooks carry no outputs: what they show comes from running them.
func TestNotebooksAreStripped(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(testbin.Root(t), "notebooks", "*.ipynb"))
	if len(files) == 0 {
		t.Fatal("no notebooks")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var nb struct {
			Cells []struct {
				Type    string            `json:"cell_type"`
				Outputs []json.RawMessage `json:"outputs"`
				Count   *int              `json:"execution_count"`
			} `json:"cells"`
		}
		if err := json.Unmarshal(b, &nb); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for i, c := range nb.Cells {
			if c.Type == "code" && (len(c.Outputs) > 0 || c.Count != nil) {
				t.Errorf("%s: cell %d has outputs; strip them before committing", filepath.Base(f), i)
			}
		}
	}
}
