package server

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/plumbing/netport"
)

var iris = filepath.Join("..", "testdata", "models", "iris")

func config(dir string) Config {
	return Config{ModelName: "iris", ModelDir: dir, HTTPAddr: "127.0.0.1:0", GRPCAddr: "127.0.0.1:0",
		MaxBodyBytes: 1 << 20, RequestTimeout: 10 * time.Second, ShutdownTimeout: 10 * time.Second}
}

// configOnOwnPorts is config with the REST and gRPC ports picked by netport: outside the kernel's
// ephemeral range and reserved on the machine, so that once the server has closed them no other
// test's listener on ":0" takes them over, and a connection refused there means the server's
// listener is closed (a run of make test once saw a port from ":0" accept again right after the
// server's shutdown: another package's listener had been given it).
func configOnOwnPorts(t *testing.T, dir string) Config {
	t.Helper()
	cfg := config(dir)
	for _, addr := range []*string{&cfg.HTTPAddr, &cfg.GRPCAddr} {
		p, err := netport.Free()
		if err != nil {
			t.Fatal(err)
		}
		*addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	return cfg
}

// start runs s until the test ends; wait returns Run's result once it has returned.
func start(t *testing.T, s *Server) (cancel context.CancelFunc, wait func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var err error
	done := make(chan struct{})
	go func() { err = s.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return cancel, func() error { <-done; return err }
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The ports answer before the models load (live), the model serves once loaded, and a
// cancelled context drains and closes both ports.
func TestServesThenStops(t *testing.T) {
	s, err := Listen(configOnOwnPorts(t, iris))
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + s.HTTPAddr().String()
	cancel, wait := start(t, s)
	if code, _ := get(t, base+"/v2/health/live"); code != 200 {
		t.Fatalf("live = %d", code)
	}
	for {
		if code, _ := get(t, base+"/v2/health/ready"); code == 200 {
			break
		}
		time.Sleep(10 * time.Millisecond) // the load runs beside the server; the test's deadline bounds it
	}
	resp, err := http.Post(base+"/v2/models/iris/infer", "application/json",
		strings.NewReader(`{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[5.1,3.5,1.4,0.2]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"model_name":"iris"`) {
		t.Fatalf("infer = %d %s", resp.StatusCode, b)
	}
	grpcAddr := s.GRPCAddr().String()
	if c, err := net.Dial("tcp", grpcAddr); err != nil {
		t.Fatalf("gRPC port: %v", err)
	} else {
		c.Close()
	}
	cancel()
	if err := wait(); err != nil {
		t.Fatalf("Run after cancel = %v", err)
	}
	for _, addr := range []string{s.HTTPAddr().String(), grpcAddr} {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			t.Errorf("%s still accepts after shutdown", addr)
		}
	}
}

// With ExitOnLoadFailure a model that fails to load at start ends Run with the reason; without
// it the server stays up, live and not ready.
func TestLoadFailureAtStart(t *testing.T) {
	empty := t.TempDir()
	cfg := configOnOwnPorts(t, empty)
	cfg.ExitOnLoadFailure = true
	s, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, wait := start(t, s)
	err = wait()
	if err == nil || !strings.Contains(err.Error(), "--exit_on_load_failure") || !strings.Contains(err.Error(), "no model file in "+empty) {
		t.Fatalf("Run = %v, want the load failure naming %s", err, empty)
	}
	if c, err := net.Dial("tcp", s.HTTPAddr().String()); err == nil {
		c.Close()
		t.Error("the REST port still accepts after Run failed")
	}

	s, err = Listen(config(empty))
	if err != nil {
		t.Fatal(err)
	}
	start(t, s)
	base := "http://" + s.HTTPAddr().String()
	if code, _ := get(t, base+"/v2/health/live"); code != 200 {
		t.Fatalf("live = %d", code)
	}
	for {
		code, body := get(t, base+"/v2/health/ready")
		if code == 503 && strings.Contains(body, "no model file in "+empty) {
			break
		}
		if code == 200 {
			t.Fatal("ready without a model")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A taken port is an error naming it, and Listen leaves no port of its own bound.
func TestListenOnATakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, port, _ := net.SplitHostPort(taken.Addr().String())
	cfg := config(iris)
	cfg.HTTPAddr = taken.Addr().String()
	if _, err := Listen(cfg); err == nil || !strings.Contains(err.Error(), "listen on REST port "+port) {
		t.Errorf("REST on a taken port: %v", err)
	}
	free, err := netport.Free() // outside the ephemeral range: no outgoing connection takes it meanwhile
	if err != nil {
		t.Fatal(err)
	}
	restAddr := "127.0.0.1:" + strconv.Itoa(free)
	cfg = config(iris)
	cfg.HTTPAddr, cfg.GRPCAddr = restAddr, taken.Addr().String()
	if _, err := Listen(cfg); err == nil || !strings.Contains(err.Error(), "listen on gRPC port "+port) {
		t.Errorf("gRPC on a taken port: %v", err)
	}
	l, err := net.Listen("tcp", restAddr)
	if err != nil {
		t.Fatalf("the REST port stays bound after Listen failed: %v", err)
	}
	l.Close()
}
