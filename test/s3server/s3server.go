// Package s3server starts a real S3-compatible object store for tests: the MinIO server (what
// Kubeflow Pipelines ships as its artifact store), built from its Go module under tools/minio
// into the gangboost cache, on a free port with a temporary data folder, stopped when the test
// ends. A counting proxy in front of it records every request (operation, object, bytes sent,
// client), so a test can tell what each rank of a gang read.
package s3server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/gangboost/gangboost/internal/plumbing/netport"
	"github.com/gangboost/gangboost/internal/plumbing/procgroup"
	"github.com/gangboost/gangboost/internal/plumbing/repodir"
	"github.com/gangboost/gangboost/test/toolbuild"
)

// The root credentials of every test server.
const (
	AccessKey = "gangboost-test"
	SecretKey = "gangboost-test-secret"
)

// Server is a running MinIO server with a counting proxy in front.
type Server struct {
	// Endpoint is the proxy's http://127.0.0.1:port: what clients use.
	Endpoint string
	// Direct is the server's own endpoint, bypassing the counting.
	Direct string
	Client *minio.Client

	bin      string
	mu       sync.Mutex
	requests []Request
}

// Request is one request the server answered through the proxy.
type Request struct {
	Method, Bucket, Key string
	Query               string
	UserAgent           string
	Status              int
	BytesSent           int64
}

// Binary builds the MinIO server into the cache ($GANGBOOST_CACHE/s3server, else
// ~/.cache/gangboost/s3server) unless it is there, and returns it. A change of tools/minio's
// go.mod or go.sum, or of the Go version, builds anew. Builds run at nice 10 under a file lock.
func Binary(ctx context.Context, log io.Writer) (string, error) {
	root, err := repodir.Root()
	if err != nil {
		return "", err
	}
	mod := filepath.Join(root, "test", "s3server", "tools", "minio")
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum", "iamuser/main.go"} {
		b, err := os.ReadFile(filepath.Join(mod, f))
		if err != nil {
			return "", err
		}
		h.Write(b)
	}
	gv, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	h.Write(gv)
	stamp := hex.EncodeToString(h.Sum(nil))[:16]
	cache := os.Getenv("GANGBOOST_CACHE")
	if cache == "" {
		home, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		cache = filepath.Join(home, "gangboost")
	}
	dir := filepath.Join(cache, "s3server")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "minio-"+stamp)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	// The admin helper (iamuser) is built first, so that the server's binary stands for both.
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	if _, err := os.Stat(bin); err == nil {
		return bin, nil // another test process built it meanwhile
	}
	fmt.Fprintf(log, "s3server: building the MinIO server into %s (the first build takes minutes)\n", bin)
	start := time.Now()
	for _, b := range []struct{ pkg, out string }{{"./iamuser", iamUserBinary(bin)}, {"github.com/minio/minio", bin}} {
		tmp := b.out + ".tmp"
		cmd := exec.CommandContext(ctx, "nice", append([]string{"-n", "10", "go"}, toolbuild.Args(tmp, "-s -w", b.pkg)...)...)
		cmd.Dir = mod
		cmd.Env = toolbuild.Env()
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("build %s in %s: %w\n%s", b.pkg, mod, err, out.String())
		}
		if err := os.Rename(tmp, b.out); err != nil {
			return "", err
		}
	}
	fmt.Fprintf(log, "s3server: built the MinIO server in %s\n", time.Since(start).Round(time.Second))
	return bin, nil
}

// iamUserBinary is where Binary puts the admin helper beside the server binary bin.
func iamUserBinary(bin string) string {
	return filepath.Join(filepath.Dir(bin), strings.Replace(filepath.Base(bin), "minio-", "iamuser-", 1))
}

// Start builds (once) and starts a MinIO server for t, stopped when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	bin, err := Binary(ctx, testLog{t})
	if err != nil {
		t.Fatal(err)
	}
	port, err := netport.Free()
	if err != nil {
		t.Fatal(err)
	}
	console, err := netport.Free()
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	cmd := exec.Command(bin, "server", data, "--quiet", "--address", fmt.Sprintf("127.0.0.1:%d", port),
		"--console-address", fmt.Sprintf("127.0.0.1:%d", console))
	cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+AccessKey, "MINIO_ROOT_PASSWORD="+SecretKey,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off", "CI=true")
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	p, err := procgroup.Start(cmd)
	if err != nil {
		t.Fatalf("start MinIO: %v", err)
	}
	t.Cleanup(func() { p.Stop(5 * time.Second) })
	direct := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(direct + "/minio/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if p.Exited() || time.Now().After(deadline) {
			t.Fatalf("MinIO did not get ready on %s: %v\n%s", direct, err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	s := &Server{Direct: direct, bin: bin}
	s.Endpoint = s.startProxy(t, "127.0.0.1:0", direct)
	s.Client, err = minio.New(strings.TrimPrefix(s.Endpoint, "http://"), &minio.Options{
		Creds: credentials.NewStaticV4(AccessKey, SecretKey, ""), BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ListenOn serves the store (through the counting proxy) on ip as well, on a free port, and
// returns that endpoint: for clients that cannot reach 127.0.0.1, such as pods.
func (s *Server) ListenOn(t testing.TB, ip string) string {
	return s.startProxy(t, net.JoinHostPort(ip, "0"), s.Direct)
}

// startProxy serves a reverse proxy to target at addr and counts what it forwards. It keeps the
// Host header as the client sent it: the request signature covers it.
func (s *Server) startProxy(t testing.TB, addr, target string) string {
	u, _ := url.Parse(target)
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.Host = r.In.Host
	}}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &countingWriter{ResponseWriter: w, status: http.StatusOK}
		rp.ServeHTTP(cw, r)
		bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		s.mu.Lock()
		s.requests = append(s.requests, Request{Method: r.Method, Bucket: bucket, Key: key, Query: r.URL.RawQuery,
			UserAgent: r.UserAgent(), Status: cw.status, BytesSent: cw.n})
		s.mu.Unlock()
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// Requests returns the requests answered so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ResetRequests forgets the requests answered so far.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	s.requests = nil
	s.mu.Unlock()
}

// Env is the environment a client of the server needs: the credentials.
func (s *Server) Env() []string {
	return []string{"AWS_ACCESS_KEY_ID=" + AccessKey, "AWS_SECRET_ACCESS_KEY=" + SecretKey}
}

// MakeBucket creates a bucket.
func (s *Server) MakeBucket(t testing.TB, bucket string) {
	t.Helper()
	if err := s.Client.MakeBucket(context.Background(), bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("make bucket %s: %v", bucket, err)
	}
}

// Put uploads data as bucket/key.
func (s *Server) Put(t testing.TB, bucket, key string, data []byte) {
	t.Helper()
	_, err := s.Client.PutObject(context.Background(), bucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{})
	if err != nil {
		t.Fatalf("put %s/%s: %v", bucket, key, err)
	}
}

// Get reads bucket/key whole.
func (s *Server) Get(t testing.TB, bucket, key string) []byte {
	t.Helper()
	obj, err := s.Client.GetObject(context.Background(), bucket, key, minio.GetObjectOptions{})
	if err != nil {
		t.Fatalf("get %s/%s: %v", bucket, key, err)
	}
	defer obj.Close()
	b, err := io.ReadAll(obj)
	if err != nil {
		t.Fatalf("read %s/%s: %v", bucket, key, err)
	}
	return b
}

type countingWriter struct {
	http.ResponseWriter
	status int
	n      int64
}

func (w *countingWriter) WriteHeader(code int) { w.status = code; w.ResponseWriter.WriteHeader(code) }
func (w *countingWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	w.n += int64(n)
	return n, err
}
func (w *countingWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

type testLog struct{ t testing.TB }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimSpace(string(b)))
	return len(b), nil
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// KubeflowNamespacePolicy is the access policy Kubeflow 1.11 gives a profile namespace's key pair
// on its object store (bucket mlpipeline): the namespace's own private-artifacts/<ns>/ and
// private/<ns>/, and the shared artifacts/ and shared/.
func KubeflowNamespacePolicy(namespace string) string {
	return fmt.Sprintf(`{"Version": "2012-10-17", "Statement": [
  {"Effect": "Allow", "Action": ["s3:GetBucketLocation"], "Resource": ["arn:aws:s3:::mlpipeline"]},
  {"Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": ["arn:aws:s3:::mlpipeline"],
   "Condition": {"StringLike": {"s3:prefix": ["artifacts/*", "private-artifacts/%[1]s/*", "private/%[1]s/*", "shared/*"]}}},
  {"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
   "Resource": ["arn:aws:s3:::mlpipeline/artifacts/*", "arn:aws:s3:::mlpipeline/private-artifacts/%[1]s/*",
                "arn:aws:s3:::mlpipeline/private/%[1]s/*", "arn:aws:s3:::mlpipeline/shared/*"]}]}`, namespace)
}

// AddUser adds a user (its access key) with secretKey, allowed what policy (an IAM policy
// document) allows, through MinIO's admin API.
func (s *Server) AddUser(t testing.TB, accessKey, secretKey, policy string) {
	t.Helper()
	cmd := exec.Command(iamUserBinary(s.bin), s.Direct, AccessKey, SecretKey, accessKey, secretKey, "policy-"+accessKey)
	cmd.Stdin = strings.NewReader(policy)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("add MinIO user %s: %v\n%s", accessKey, err, out)
	}
}
