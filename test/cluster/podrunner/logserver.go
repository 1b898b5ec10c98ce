package podrunner

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// serveLogs answers the kubelet's container log endpoint, GET
// /containerLogs/<namespace>/<pod>/<container>, from the log files of the pods this runner runs,
// until ctx ends. The API server proxies pods/log (kubectl logs, a component reading a failing
// pod's log tail) to it at the node's InternalIP and daemonEndpoints.kubeletEndpoint port.
// Supported: tailLines, limitBytes and previous (the run before the last restart); follow is
// answered with what is there now.
func (r *Runner) serveLogs(ctx context.Context) error {
	ln, err := net.Listen("tcp", r.opts.LogServer)
	if err != nil {
		return fmt.Errorf("podrunner: log server: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", func(w http.ResponseWriter, req *http.Request) {
		path := filepath.Join(r.opts.LogDir, fmt.Sprintf("%s_%s_%s.log", req.PathValue("namespace"), req.PathValue("pod"), req.PathValue("container")))
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			http.Error(w, fmt.Sprintf("container %q in pod %q has no log (not started)", req.PathValue("container"), req.PathValue("pod")), http.StatusNotFound)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		q := req.URL.Query()
		out, ok := containerRun(b, q.Get("previous") == "true")
		if !ok {
			http.Error(w, fmt.Sprintf("previous terminated container %q in pod %q not found", req.PathValue("container"), req.PathValue("pod")), http.StatusBadRequest)
			return
		}
		if n, err := strconv.Atoi(q.Get("tailLines")); err == nil && n >= 0 {
			out = tailLines(out, n)
		}
		if n, err := strconv.Atoi(q.Get("limitBytes")); err == nil && n >= 0 && n < len(out) {
			out = out[:n]
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(out)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	go func() { _ = srv.ServeTLS(ln, r.opts.LogServerCert, r.opts.LogServerKey) }()
	return nil
}

// containerRun is one run of a container from its log file, which holds every run of it, each
// starting with the runner's "$ command" line and ending with its "exit: N" line: the last run, or
// the one before it (previous). Those two lines are the runner's, not the container's.
func containerRun(log []byte, previous bool) ([]byte, bool) {
	var runs [][]byte
	var cur *bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, CommandLinePrefix) {
			cur = &bytes.Buffer{}
			runs = append(runs, nil)
			continue
		}
		if cur == nil {
			continue
		}
		if IsExitLine(line) {
			runs[len(runs)-1] = cur.Bytes()
			cur = nil
			continue
		}
		cur.WriteString(line + "\n")
		runs[len(runs)-1] = cur.Bytes()
	}
	i := len(runs) - 1
	if previous {
		i--
	}
	if i < 0 {
		return nil, !previous
	}
	return runs[i], true
}

// A container's log file holds each run of it between two lines of the runner's own: the
// command it ran after CommandLinePrefix, and "exit: N" (IsExitLine).
const CommandLinePrefix = "$ "

// IsExitLine reports the runner's "exit: N" line, which ends a run in a container's log file.
func IsExitLine(line string) bool {
	code, ok := strings.CutPrefix(line, "exit: ")
	if !ok {
		return false
	}
	_, err := strconv.Atoi(code)
	return err == nil
}

// tailLines is the last n lines of b.
func tailLines(b []byte, n int) []byte {
	if n == 0 {
		return nil
	}
	end := len(b)
	if end > 0 && b[end-1] == '\n' {
		end--
	}
	for i := end - 1; i >= 0; i-- {
		if b[i] == '\n' {
			n--
			if n == 0 {
				return b[i+1:]
			}
		}
	}
	return b
}
