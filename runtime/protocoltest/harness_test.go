package protocoltest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/plumbing/repodir"
	"github.com/gangboost/gangboost/internal/plumbing/syncbuf"
	"github.com/gangboost/gangboost/test/evaltest"
	"github.com/gangboost/gangboost/test/testbin"
)

var runtimeBin string

// root is the checkout (repodir.Root).
var root string

func modelsDir() string { return filepath.Join(root, "runtime", "testdata", "models") }

func TestMain(m *testing.M) {
	var err error
	if root, err = repodir.Root(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if bin := os.Getenv("GANGBOOST_RUNTIME_UNDER_TEST"); bin != "" {
		// Run the suite against another build, e.g. an older one to show a test fails there.
		runtimeBin = bin
	} else if runtimeBin, err = testbin.Build("./runtime/cmd/gangboost-runtime", "CGO_ENABLED=0"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testbin.Main(m)
}

// hangGuard bounds every wait for the server (start, load, a call) that would otherwise hang
// forever: far beyond what a loaded CI machine takes, so it catches hangs, not slowness.
const hangGuard = time.Minute

// freePort is the shared test port picker.
var freePort = evaltest.FreePort

type logBuffer = syncbuf.Buffer

// server is one running gangboost-runtime.
type server struct {
	URL      string
	GRPCAddr string
	cmd      *exec.Cmd
	log      *logBuffer
	exited   chan struct{}
}

// start runs the binary with args plus free ports and waits until it is live.
// start starts the server and returns once it is live and has loaded its models (or failed to).
func start(t testing.TB, args ...string) *server {
	t.Helper()
	s := startLive(t, args...)
	if !s.waitLoaded(time.Now().Add(hangGuard)) {
		t.Fatalf("server live but its models neither ready nor failed after %s:\n%s", hangGuard, s.log.String())
	}
	return s
}

// startLive starts the server and returns once it answers /v2/health/live, models loaded or not.
func startLive(t testing.TB, args ...string) *server {
	t.Helper()
	hp, gp := freePort(t), freePort(t)
	args = append(args, "--http_port", strconv.Itoa(hp), "--grpc_port", strconv.Itoa(gp))
	s := &server{URL: "http://127.0.0.1:" + strconv.Itoa(hp), GRPCAddr: "127.0.0.1:" + strconv.Itoa(gp),
		log: &logBuffer{}, exited: make(chan struct{})}
	s.cmd = exec.Command(runtimeBin, args...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-s.exited
		if t.Failed() {
			t.Logf("server log:\n%s", s.log.String())
		}
	})
	deadline := time.Now().Add(hangGuard)
	for {
		resp, err := http.Get(s.URL + "/v2/health/live")
		if err == nil {
			resp.Body.Close()
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not live after %s:\n%s", hangGuard, s.log.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitLoaded waits until the server has logged whether its models loaded ("ready" or
// "not ready"): the server answers probes while it loads.
func (s *server) waitLoaded(deadline time.Time) bool {
	return s.logHolds(deadline, `"msg":"ready"`, `"msg":"not ready"`)
}

// waitLog waits until the server's log holds text.
func (s *server) waitLog(t *testing.T, text string) {
	t.Helper()
	if !s.logHolds(time.Now().Add(hangGuard), text) {
		t.Fatalf("no %q in the log after %s:\n%s", text, hangGuard, s.log.String())
	}
}

// logHolds waits until the server's log holds one of texts, or deadline passes (false).
func (s *server) logHolds(deadline time.Time, texts ...string) bool {
	for {
		log := s.log.String()
		for _, text := range texts {
			if strings.Contains(log, text) {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// startIris serves the iris model (multi:softprob, 4 features) as "iris" version "1".
func startIris(t testing.TB, extra ...string) *server {
	return start(t, append([]string{"--model_name", "iris", "--model_version", "1",
		"--model_dir", filepath.Join(modelsDir(), "iris")}, extra...)...)
}

// call sends a request and returns status, headers and body.
func call(t testing.TB, method, url string, body []byte, headers ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func decode(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("response is not a JSON object: %v: %s", err, b)
	}
	return m
}

// stopGracefully sends SIGTERM and waits for the process to exit.
func (s *server) stopGracefully(t testing.TB) int {
	t.Helper()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	// A hang detector, not a timing: it is longer than any --shutdown_timeout a test passes, so a
	// loaded machine (make test runs packages side by side) slows a drain without failing it.
	case <-time.After(2 * time.Minute):
		t.Fatal("server did not exit 2m after SIGTERM")
	}
	return s.cmd.ProcessState.ExitCode()
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
