package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/kfp/kfptest"
	"github.com/gangboost/gangboost/internal/steps/prepare"
	"github.com/gangboost/gangboost/test/testbin"
)

// boundInputs are the inputs that bound a download; a test that does not set them leaves them
// out of the ExecutorInput, so the binary applies its own defaults.
var boundInputs = []string{"max_download_bytes", "max_gzip_ratio", "download_timeout_seconds", "stall_timeout_seconds"}

// binaryRun is the real bin/prepare-data running on a fresh claim, with TMPDIR in a fresh folder.
type binaryRun struct {
	cmd          *exec.Cmd
	stderr       bytes.Buffer
	claim, tmp   string
	done         chan struct{}
	exited       time.Time
	maxRSSKiB    int64
	exitCode     int
	waitErr      error
	signalled    time.Time
	signalToExit time.Duration
}

func startBinary(t *testing.T, params map[string]any) *binaryRun {
	t.Helper()
	bin := filepath.Join(testbin.Dir(t), "prepare-data")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%v: run make build (or go build -o bin/prepare-data ./components/prepare-data)", err)
	}
	dir := t.TempDir()
	r := &binaryRun{claim: filepath.Join(dir, "claim"), tmp: filepath.Join(dir, "tmp"), done: make(chan struct{})}
	for _, d := range []string{r.claim, r.tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c := prepare.Component(image)
	c.Inputs = slices.DeleteFunc(slices.Clone(c.Inputs), func(in kfp.Input) bool {
		_, set := params[in.Name]
		return !set && slices.Contains(boundInputs, in.Name)
	})
	params["pvc_mount_path"] = r.claim
	in := kfptest.ExecutorInput(t, c, params, dir)
	r.cmd = exec.Command(bin, "--executor-input", string(in))
	r.cmd.Env = append(os.Environ(), "TMPDIR="+r.tmp)
	r.cmd.Stderr = &r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		r.waitErr = r.cmd.Wait()
		r.exited = time.Now()
		r.exitCode = r.cmd.ProcessState.ExitCode()
		close(exited)
	}()
	// The peak RSS is the process's VmHWM, read until it exits (getrusage's ru_maxrss would
	// count the test process too: Go starts a child on the parent's memory until exec). A
	// reading every 10 ms misses at most the growth of the last 10 ms.
	go func() {
		status := fmt.Sprintf("/proc/%d/status", r.cmd.Process.Pid)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			if kib := vmHWM(status); kib > r.maxRSSKiB {
				r.maxRSSKiB = kib
			}
			select {
			case <-exited:
				close(r.done)
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			r.cmd.Process.Kill()
			<-r.done
		}
	})
	return r
}

// vmHWM is the "VmHWM: 1234 kB" line of a /proc/<pid>/status file, 0 when it cannot be read.
func vmHWM(status string) int64 {
	b, err := os.ReadFile(status)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kib
		}
	}
	return 0
}

// signal sends sig and waits up to limit for the exit; a run still going then is killed and
// fails t (the guard keeps a hang from holding the test, it times nothing).
func (r *binaryRun) signal(t *testing.T, sig os.Signal, limit time.Duration) {
	t.Helper()
	r.signalled = time.Now()
	if err := r.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.done:
		r.signalToExit = r.exited.Sub(r.signalled)
	case <-time.After(limit):
		r.cmd.Process.Kill()
		<-r.done
		t.Fatalf("prepare-data still running %v after %v; stderr:\n%s", limit, sig, r.stderr.String())
	}
}

// leftovers is every file under the claim and TMPDIR after the run, with its size.
func (r *binaryRun) leftovers(t *testing.T) []string {
	t.Helper()
	var found []string
	for _, dir := range []string{r.claim, r.tmp} {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if fi, err := d.Info(); err == nil {
					found = append(found, fmt.Sprintf("%s (%d bytes)", p, fi.Size()))
				}
			}
			return nil
		})
	}
	return found
}

// gzipMember is one gzip member of data; members concatenated are one gzip stream.
func gzipMember(data []byte, level int) []byte {
	var b bytes.Buffer
	z, _ := gzip.NewWriterLevel(&b, level)
	z.Write(data)
	z.Close()
	return b.Bytes()
}

// TestSIGTERMStopsTheParse: SIGTERM while prepare-data parses a gzip body that expands a
// thousand times (bytes already received, no network read to cancel) ends the step at once,
// with a message, without writing the data set and without a temporary copy.
func TestSIGTERMStopsTheParse(t *testing.T) {
	// 4 MiB of random rows (gzip about 2.5:1), then 640 MiB of rows "0,0,0" in 16 KiB members:
	// under the default max_gzip_ratio for the first 400 MiB or so, seconds of parsing.
	rnd := rand.New(rand.NewPCG(3, 4))
	var text bytes.Buffer
	text.WriteString("a,b,y\n")
	for text.Len() < 10<<20 {
		fmt.Fprintf(&text, "%.6f,%.6f,%d\n", rnd.Float64(), rnd.Float64(), rnd.IntN(2))
	}
	body := gzipMember(text.Bytes(), gzip.BestSpeed)
	bomb := gzipMember(bytes.Repeat([]byte("0,0,0\n"), 16<<20/6), gzip.BestCompression)
	for range 40 {
		body = append(body, bomb...)
	}
	t.Logf("body: %d bytes of gzip for %d MiB of CSV", len(body), (text.Len()+40*(16<<20))>>20)
	var sentAll atomic.Bool
	sent := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(body)
		if !sentAll.Swap(true) {
			close(sent)
		}
	}))
	defer srv.Close()

	r := startBinary(t, map[string]any{"dataset": srv.URL + "/data.csv.gz", "name": "bomb", "label": "y"})
	select {
	case <-sent:
	case <-r.done:
		t.Fatalf("prepare-data exited %d before the signal: %s", r.exitCode, r.stderr.String())
	}
	time.Sleep(100 * time.Millisecond) // into the parse of the bytes received
	// Stopping is shown by the message below: a parse that ignored the signal would end seconds
	// later at max_gzip_ratio with another message. The minute is only a hang guard.
	r.signal(t, syscall.SIGTERM, time.Minute)
	t.Logf("exit %d %v after SIGTERM, peak RSS %d MiB; stderr: %s", r.exitCode, r.signalToExit.Round(time.Millisecond), r.maxRSSKiB>>10, r.stderr.String())
	if r.exitCode != 1 || !strings.Contains(r.stderr.String(), "/data.csv.gz: stopped") {
		t.Errorf("exit %d, stderr %q: want 1 and the step stopped", r.exitCode, r.stderr.String())
	}
	if left := r.leftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestKillLeavesNothing: prepare-data killed (SIGKILL, no cleanup runs) while an endless CSV
// streams in leaves no bytes in TMPDIR or on the claim: the body is parsed as it arrives,
// never staged.
func TestKillLeavesNothing(t *testing.T) {
	var sent atomic.Int64
	enough := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		row := bytes.Repeat([]byte("1.5,2.5,0\n"), 4096)
		w.Write([]byte("a,b,y\n"))
		for r.Context().Err() == nil {
			n, err := w.Write(row)
			if sent.Add(int64(n)) >= 32<<20 && sent.Load()-int64(n) < 32<<20 {
				close(enough)
			}
			if err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	r := startBinary(t, map[string]any{"dataset": srv.URL + "/endless.csv", "name": "endless", "label": "y"})
	select {
	case <-enough:
	case <-r.done:
		t.Fatalf("prepare-data exited %d before the kill: %s", r.exitCode, r.stderr.String())
	}
	r.signal(t, syscall.SIGKILL, time.Minute)
	t.Logf("killed after %d MiB sent; peak RSS %d MiB", sent.Load()>>20, r.maxRSSKiB>>10)
	if left := r.leftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestGzipBombFailsWithLittleMemory: a 2 MB gzip body that expands to 2 GiB of CSV fails once it
// passes max_gzip_ratio, and the process's peak RSS stays a small multiple of the bytes let
// through (here 10 x the 1 MiB the ratio is judged against at least).
func TestGzipBombFailsWithLittleMemory(t *testing.T) {
	member := gzipMember(append([]byte("a,b,y\n"), bytes.Repeat([]byte("0,0,0\n"), 16<<20/6)...), gzip.BestCompression)
	rows := gzipMember(bytes.Repeat([]byte("0,0,0\n"), 16<<20/6), gzip.BestCompression)
	body := member
	for len(body) < 2<<20 {
		body = append(body, rows...)
	}
	t.Logf("body: %d bytes of gzip for %d MiB of CSV", len(body), 16*(len(body)/len(rows)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	defer srv.Close()
	r := startBinary(t, map[string]any{"dataset": srv.URL + "/bomb.csv.gz", "name": "bomb", "label": "y", "max_gzip_ratio": 10})
	start := time.Now()
	select {
	case <-r.done:
	case <-time.After(2 * time.Minute): // a hang guard: it fails within a second or so
		t.Fatalf("prepare-data still running after 2 minutes; stderr:\n%s", r.stderr.String())
	}
	t.Logf("exit %d after %v, peak RSS %d MiB; stderr: %s", r.exitCode, time.Since(start).Round(time.Millisecond), r.maxRSSKiB>>10, r.stderr.String())
	if r.exitCode != 1 || !strings.Contains(r.stderr.String(), "gzip data expand to more than 10 times their size") {
		t.Errorf("exit %d, stderr %q: want 1 and the ratio bound", r.exitCode, r.stderr.String())
	}
	// 10 MiB of CSV parsed (16 bytes of matrix and labels per 6-byte row), buffers and the
	// runtime: about 40 MiB.
	if r.maxRSSKiB > 128<<10 {
		t.Errorf("peak RSS %d MiB", r.maxRSSKiB>>10)
	}
	if left := r.leftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestEndlessCSVFailsAtTheMemoryBound: an endless CSV, parsed as it streams in, fails once the
// parsed rows would pass max_matrix_bytes (here 64 MiB: 8 Mi rows of 2 features), long before
// the 1 GiB max_download_bytes, with a message naming the URL, the bound and the rows read; the
// process's peak RSS stays near what the bound admits (the matrix, 8 bytes of labels a row while
// parsing, buffers and the runtime: about 150 MiB) and nothing is left on disk.
func TestEndlessCSVFailsAtTheMemoryBound(t *testing.T) {
	var sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		row := bytes.Repeat([]byte("1.5,2.5,0\n"), 4096)
		w.Write([]byte("a,b,y\n"))
		for r.Context().Err() == nil {
			n, err := w.Write(row)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	params := map[string]any{"dataset": srv.URL + "/endless.csv", "name": "endless", "label": "y", "max_matrix_bytes": 64 << 20}
	r := startBinary(t, params)
	start := time.Now()
	select {
	case <-r.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("prepare-data still running after 2 minutes, %d MiB sent; stderr:\n%s", sent.Load()>>20, r.stderr.String())
	}
	t.Logf("exit %d after %v, %d MiB sent, peak RSS %d MiB; stderr: %s", r.exitCode, time.Since(start).Round(time.Millisecond),
		sent.Load()>>20, r.maxRSSKiB>>10, r.stderr.String())
	for _, want := range []string{"/endless.csv: ", "more than max_matrix_bytes 64 MiB", "after 8388608 data rows", "raise max_matrix_bytes", "more memory"} {
		if !strings.Contains(r.stderr.String(), want) {
			t.Errorf("exit %d, stderr %q: want 1 and %q", r.exitCode, r.stderr.String(), want)
		}
	}
	if r.exitCode != 1 {
		t.Errorf("exit %d, want 1", r.exitCode)
	}
	if r.maxRSSKiB > 200<<10 {
		t.Errorf("peak RSS %d MiB, want under 200 MiB", r.maxRSSKiB>>10)
	}
	if left := r.leftovers(t); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
