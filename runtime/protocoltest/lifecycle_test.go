package protocoltest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func copyModel(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(from)
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMissingOrCorruptModelKeepsServerNotReady(t *testing.T) {
	empty := t.TempDir()
	corrupt := t.TempDir()
	if err := os.WriteFile(filepath.Join(corrupt, "model.json"), []byte(`{"learner": {"gradient_booster": `), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, dir, want string
	}{
		{"missing", empty, "no model file in " + empty},
		{"corrupt", corrupt, filepath.Join(corrupt, "model.json")},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := start(t, "--model_name", "m", "--model_dir", c.dir)
			if status, _, _ := call(t, "GET", s.URL+"/v2/health/live", nil); status != 200 {
				t.Fatalf("live = %d, want 200", status)
			}
			for _, path := range []string{"/v2/health/ready", "/v2/models/m/ready"} {
				status, _, body := call(t, "GET", s.URL+path, nil)
				if status != 503 || !strings.Contains(string(body), c.want) {
					t.Fatalf("%s = %d %s; want 503 naming %q", path, status, body, c.want)
				}
			}
			status, _, body := call(t, "POST", s.URL+"/v2/models/m/infer", []byte(`{"inputs":[]}`))
			if status != 503 || !strings.Contains(string(body), c.want) {
				t.Fatalf("infer = %d %s; want 503 naming %q", status, body, c.want)
			}
			if !strings.Contains(s.log.String(), `"msg":"not ready"`) {
				t.Fatalf("log does not say why the server is not ready:\n%s", s.log.String())
			}
		})
	}
}

// With --exit_on_load_failure, a model that fails to load at start ends the process with
// exit code 1 and a last line naming the folder: under KServe that line becomes the container's
// termination message (FallbackToLogsOnError) and the InferenceService's lastFailureInfo.
func TestExitOnLoadFailure(t *testing.T) {
	empty := t.TempDir()
	cmd := exec.Command(runtimeBin, "--model_name", "m", "--model_dir", empty, "--exit_on_load_failure",
		"--http_port", strconv.Itoa(freePort(t)), "--grpc_port", "0")
	out := &logBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("exit = %v, want exit code 1\n%s", err, out.String())
		}
	case <-time.After(hangGuard):
		_ = cmd.Process.Kill()
		t.Fatalf("still running %s after a failed load\n%s", hangGuard, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "gangboost-runtime: model load failed at start") || !strings.Contains(last, "no model file in "+empty) {
		t.Errorf("last line %q does not say the load failed and name %s", last, empty)
	}
}

// The server answers probes while a model loads: live at once, not ready with "still loading",
// ready when the load completes. The model file is a FIFO, so the load lasts until the test
// writes the model into it.
func TestLiveWhileTheModelLoads(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "model.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	s := startLive(t, "--model_name", "iris", "--model_dir", dir)
	for _, c := range []struct {
		path   string
		status int
		want   string
	}{
		{"/v2/health/live", 200, `"live":true`},
		{"/v2/health/ready", 503, "still loading"},
		{"/v2/models/iris/ready", 503, "still loading"},
	} {
		if status, _, body := call(t, "GET", s.URL+c.path, nil); status != c.status || !strings.Contains(string(body), c.want) {
			t.Fatalf("while loading: %s = %d %s; want %d with %q", c.path, status, body, c.status, c.want)
		}
	}
	model, err := os.ReadFile(filepath.Join(modelsDir(), "iris", "model.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Opening the FIFO for writing blocks until the server opens it for reading.
	if err := os.WriteFile(fifo, model, 0o644); err != nil {
		t.Fatal(err)
	}
	if !s.waitLoaded(time.Now().Add(hangGuard)) {
		t.Fatal("no ready/not ready log line after the model was written")
	}
	if status, _, body := call(t, "GET", s.URL+"/v2/health/ready", nil); status != 200 {
		t.Fatalf("ready after load = %d %s", status, body)
	}
}

func TestLoadAfterTheModelArrives(t *testing.T) {
	dir := t.TempDir()
	s := start(t, "--model_name", "iris", "--model_dir", dir)
	if status, _, _ := call(t, "GET", s.URL+"/v2/health/ready", nil); status != 503 {
		t.Fatalf("ready before the model exists = %d", status)
	}
	copyModel(t, filepath.Join(modelsDir(), "iris"), dir)
	if status, _, body := call(t, "POST", s.URL+"/v2/repository/models/iris/load", nil); status != 200 {
		t.Fatalf("load = %d %s", status, body)
	}
	if status, _, _ := call(t, "GET", s.URL+"/v2/health/ready", nil); status != 200 {
		t.Fatalf("ready after load = %d", status)
	}
}

func TestModelRepositoryServesEveryFolder(t *testing.T) {
	s := start(t, "--model_dir", modelsDir())
	status, _, body := call(t, "GET", s.URL+"/v2/models", nil)
	if status != 200 || !contains(string(body), `"binary"`, `"iris"`) {
		t.Fatalf("models = %d %s", status, body)
	}
	for _, c := range []struct{ model, body string }{
		{"iris", `{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[5,3,1,0]}]}`},
		{"binary", `{"inputs":[{"name":"x","shape":[1,6],"datatype":"FP32","data":[1,0,-1,0,1,0]}]}`},
	} {
		if status, _, body := call(t, "POST", s.URL+"/v2/models/"+c.model+"/infer", []byte(c.body)); status != 200 {
			t.Fatalf("%s infer = %d %s", c.model, status, body)
		}
	}
}

// SIGTERM lets a request already in flight finish before the process exits: one whose body is
// still arriving when the signal comes is read, evaluated and answered during the drain, and the
// process then exits 0.
func TestGracefulShutdownDrainsInFlightRequests(t *testing.T) {
	const rows = 1000
	body := irisBody(rows)
	s := startIris(t, "--shutdown_timeout", "100s")
	held := holdRequest(t, s, body)

	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	s.waitLog(t, "draining in-flight requests")
	resp := held.finish(t)
	defer resp.Body.Close()
	var answer struct {
		Outputs []struct{ Shape []int } `json:"outputs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&answer); err != nil || resp.StatusCode != 200 ||
		len(answer.Outputs) != 1 || !slices.Equal(answer.Outputs[0].Shape, []int{rows, 3}) {
		t.Fatalf("request in flight at SIGTERM: %d %+v (%v); want 200 with %d rows of 3", resp.StatusCode, answer, err, rows)
	}
	if code := s.stopGracefully(t); code != 0 {
		t.Fatalf("exit code %d after the drain, want 0", code)
	}
	if strings.Contains(s.log.String(), "drain timed out") {
		t.Fatalf("the drain timed out:\n%s", s.log.String())
	}
}

// heldRequest is a V2 infer request whose handler is running and waiting for the second half of
// its body.
type heldRequest struct {
	conn net.Conn
	r    *bufio.Reader
	rest []byte
}

// holdRequest sends a V2 infer request of body to s with "Expect: 100-continue", and once the
// server's handler asks for the body (net/http's 100 Continue, sent on the handler's first read,
// after it reserved the body's bytes of --max_inflight_body_bytes) the first half of the body:
// the request is then in flight, known rather than assumed after a sleep.
func holdRequest(t *testing.T, s *server, body []byte) *heldRequest {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(hangGuard))
	fmt.Fprintf(conn, "POST /v2/models/iris/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"+
		"Content-Length: %d\r\nExpect: 100-continue\r\n\r\n", len(body))
	h := &heldRequest{conn: conn, r: bufio.NewReader(conn), rest: body[len(body)/2:]}
	resp, err := http.ReadResponse(h.r, nil)
	if err != nil {
		t.Fatalf("no 100 Continue: %v", err)
	}
	if resp.StatusCode != http.StatusContinue {
		answer, _ := io.ReadAll(resp.Body)
		t.Fatalf("request to hold: %d %s; want 100 Continue", resp.StatusCode, answer)
	}
	if _, err := conn.Write(body[:len(body)/2]); err != nil {
		t.Fatal(err)
	}
	return h
}

// finish sends the rest of the body and returns the answer.
func (h *heldRequest) finish(t *testing.T) *http.Response {
	t.Helper()
	if _, err := h.conn.Write(h.rest); err != nil {
		t.Fatalf("the rest of the held request's body: %v", err)
	}
	resp, err := http.ReadResponse(h.r, nil)
	if err != nil {
		t.Fatalf("no answer to the held request: %v", err)
	}
	return resp
}

func itoa(n int) string { return strconv.Itoa(n) }

// A client whose body stops arriving gets 408 naming the timeout once --request_timeout passes,
// not a connection held open forever.
func TestSlowBodyGets408(t *testing.T) {
	s := startIris(t, "--request_timeout", "300ms")
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	head := "POST /v2/models/iris/infer HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n"
	if _, err := conn.Write([]byte(head + `{"inputs":[`)); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(hangGuard))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(body), "not received within 300ms") {
		t.Fatalf("stalled body: %d %s; want 408 naming the timeout", resp.StatusCode, body)
	}
}

// A client whose request headers stop arriving has its connection closed once the header
// timeout (--request_timeout, at most 10 s) passes, instead of holding it open forever.
func TestSlowHeadersAreCutOff(t *testing.T) {
	s := startIris(t, "--request_timeout", "300ms")
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("POST /v2/models/iris/infer HTTP/1.1\r\nHost: x\r\nContent-Ty")); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(hangGuard))
	rest, err := io.ReadAll(conn)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("the server holds a connection whose headers stopped arriving")
	}
	// net/http answers a request cut off mid-headers with 400 (some timeouts with 408, or
	// nothing) before it closes; anything else would be an answer to half a request.
	if len(rest) > 0 && !strings.HasPrefix(string(rest), "HTTP/1.1 400") && !strings.HasPrefix(string(rest), "HTTP/1.1 408") {
		t.Fatalf("stalled headers answered %q", rest)
	}
}

// An idle keep-alive connection stays usable while requests keep coming within the
// timeouts: the deadlines of one request do not cut the next one short.
func TestKeepAliveOutlivesOneRequestsDeadlines(t *testing.T) {
	s := startIris(t, "--request_timeout", "300ms")
	client := &http.Client{Timeout: hangGuard}
	body := `{"inputs":[{"name":"input-0","shape":[1,4],"datatype":"FP32","data":[5.1,3.5,1.4,0.2]}]}`
	for i := 0; i < 4; i++ {
		reused := false
		trace := &httptrace.ClientTrace{GotConn: func(c httptrace.GotConnInfo) { reused = c.Reused }}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace),
			http.MethodPost, s.URL+"/v2/models/iris/infer", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if i > 0 && !reused {
			t.Fatalf("request %d came on a new connection: the server closed the kept-alive one", i)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: status %d", i, resp.StatusCode)
		}
		// Past the first request's body and header deadlines, on the same connection.
		time.Sleep(200 * time.Millisecond)
	}
}

// A model's metadata says whether its requests are batched, and the server's start says how
// --enable_batching applies: under auto each model's one-row evaluation decides, and Iris's
// (about 0.2 µs, against auto's 5) is too cheap for batching to pay.
func TestBatchingIsReportedPerModel(t *testing.T) {
	for _, c := range []struct {
		args            []string
		mode, parameter string
	}{
		{nil, "off", "false"},
		{[]string{"--enable_batching"}, "on", "true"},
		{[]string{"--enable_batching=auto"}, "auto", "false"},
	} {
		s := startIris(t, c.args...)
		if want := `"msg":"serving"`; !strings.Contains(s.log.String(), want) ||
			!strings.Contains(s.log.String(), `"batching":"`+c.mode+`"`) {
			t.Errorf("%v: the serving log line does not say batching %q:\n%s", c.args, c.mode, s.log.String())
		}
		status, _, body := call(t, "GET", s.URL+"/v2/models/iris", nil)
		var md struct {
			Parameters map[string]string `json:"parameters"`
		}
		if status != 200 || json.Unmarshal(body, &md) != nil {
			t.Fatalf("%v: metadata %d %s", c.args, status, body)
		}
		if got := md.Parameters["batching"]; got != c.parameter {
			t.Errorf("%v: metadata parameter batching %q, want %q", c.args, got, c.parameter)
		}
		if c.mode == "auto" && !strings.Contains(s.log.String(), "batching chosen by the model's evaluation cost") {
			t.Errorf("auto: the model's choice is not logged:\n%s", s.log.String())
		}
	}
}
