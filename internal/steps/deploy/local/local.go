// Package local is the deployer's local backend: it serves a model with a gangboost-runtime
// process on this machine, on free localhost ports, with a local directory standing in for the
// claim. The process outlives the step (its own session and process group) and is recorded in
// $GANGBOOST_LOCAL_STATE/processes/<name>.json, where the local pipeline runner finds it to stop it.
//
// Deploying again under the same name is a rollout: the new version starts beside the old one,
// the record switches to it once it is ready, and the old process is stopped after that, so a
// client that reads the record always finds a version that serves.
package local

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gangboost/gangboost/internal/plumbing/netport"
	"github.com/gangboost/gangboost/internal/plumbing/procgroup"
	"github.com/gangboost/gangboost/internal/steps/deploy"
)

// Record is one process in $GANGBOOST_LOCAL_STATE/processes/<name>.json: what the local runner
// stops at the end of a run, and where the service answers.
type Record struct {
	PID  int    `json:"pid"`
	PGID int    `json:"pgid"`
	Name string `json:"name"`
	URL  string `json:"url"`
	GRPC string `json:"grpc"`
	// ModelURI is the model it serves.
	ModelURI string `json:"model_uri,omitempty"`
	// RuntimeArgs are the service's own runtime flags it runs with (after the local runtime's).
	RuntimeArgs []string `json:"runtime_args,omitempty"`
}

// ProcessesDir is where records live under the state folder.
func ProcessesDir(stateDir string) string { return filepath.Join(stateDir, "processes") }

// RecordPath is the record of the service name.
func RecordPath(stateDir, name string) string {
	return filepath.Join(ProcessesDir(stateDir), name+".json")
}

// LogPath is the log of the process serving name; a version that failed to start leaves its log
// at FailedLogPath.
func LogPath(stateDir, name string) string {
	return filepath.Join(ProcessesDir(stateDir), name+".log")
}

// FailedLogPath is the log of the last version of name that did not become ready.
func FailedLogPath(stateDir, name string) string {
	return filepath.Join(ProcessesDir(stateDir), name+".failed.log")
}

// ReadRecord reads the record of name; a missing record is os.ErrNotExist.
func ReadRecord(stateDir, name string) (*Record, error) {
	b, err := os.ReadFile(RecordPath(stateDir, name))
	if err != nil {
		return nil, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", RecordPath(stateDir, name), err)
	}
	return &r, nil
}

// Backend serves models with local gangboost-runtime processes. Runtime and StateDir must be set.
type Backend struct {
	// Runtime is the gangboost-runtime executable: a path, or a name looked up in PATH.
	Runtime string
	// StateDir is $GANGBOOST_LOCAL_STATE: records and logs go to StateDir/processes.
	StateDir string
	// SwitchGrace is how long the old version keeps serving after the record names the new one,
	// for clients that read the record just before; 0 means one second.
	SwitchGrace time.Duration
	// StopTimeout is how long a stopped version may drain before SIGKILL; 0 means 30 seconds
	// (the runtime's own shutdown_timeout).
	StopTimeout time.Duration
	// LogTailLines of the runtime's log are shown when it does not become ready; 0 means 20.
	LogTailLines int

	mu      sync.Mutex
	started map[string]*proc
}

var _ deploy.Backend = (*Backend)(nil)

// servingRuntimeFlags are the flags the ClusterServingRuntimes of manifests/clusterservingruntime.yaml
// give every model beside its name, folder and ports, so a model serves here as it would in the
// cluster (TestServingRuntimeFlagsAreTheClusters). The cluster's --exit_on_load_failure is not
// among them: there it makes a failed load the container's termination message, which KServe
// reports; here Wait reads the reason from the runtime's not-ready answer, which that flag would
// end with the process.
var servingRuntimeFlags = []string{"--enable_batching=auto"}

// proc is a runtime process Apply started; Wait makes it the served version or stops it.
type proc struct {
	rec Record
	log string // its log file
	dir string // the model folder it serves
	// proc is the runtime process, reaped when it ends while this process lives.
	proc *procgroup.Process

	// lastReady is the last answer of /v2/health/ready; failure what ended the wait.
	lastReady string
	failure   string
}

// Apply starts a gangboost-runtime process for the service in its own session, logging to a file
// beside the records. A version already serving under the name keeps serving until Wait has the
// new one ready.
func (b *Backend) Apply(ctx context.Context, s *deploy.Service) error {
	_, err := b.start(ctx, s, s.Name)
	return err
}

// maxDownloadBytes bounds a model copied from an object store to serve locally.
const maxDownloadBytes = 4 << 30

// modelDir is the folder the runtime serves s's model from: on the claim, or for an s3:// model a
// checked copy under the state folder (models/<digest of the URI>), as KServe's storage
// initializer makes one in the pod.
func (b *Backend) modelDir(ctx context.Context, s *deploy.Service) (string, error) {
	if s.FromRegistry() {
		return "", fmt.Errorf("model_uri %s: the local backend serves pvc:// and s3:// models; a model-registry:// URI is resolved by the registry's storage initializer on a cluster (give the version's artifact URI here)", s.ModelURI)
	}
	if !s.InObjectStore() {
		return s.LocalModelDir()
	}
	f, err := s.ModelObjects()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(s.ModelURI))
	dir := filepath.Join(b.StateDir, "models", hex.EncodeToString(sum[:8]))
	if _, err := f.Download(ctx, dir, maxDownloadBytes); err != nil {
		return "", fmt.Errorf("model_uri %s: %w", s.ModelURI, err)
	}
	return dir, nil
}

// start starts a gangboost-runtime process serving s's model under s.Name, to be recorded as
// key (the service's name, or a challenger's beside it).
func (b *Backend) start(ctx context.Context, s *deploy.Service, key string) (*proc, error) {
	if b.Runtime == "" || b.StateDir == "" {
		return nil, errors.New("local serving backend: Runtime (the gangboost-runtime executable) and StateDir ($GANGBOOST_LOCAL_STATE) must be set")
	}
	runtimeBin, err := exec.LookPath(b.Runtime)
	if err != nil {
		return nil, fmt.Errorf("local service %s: runtime: %w (set GANGBOOST_BIN_DIR to the folder holding gangboost-runtime)", s.Name, err)
	}
	dir, err := b.modelDir(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("local service %s: %w", s.Name, err)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return nil, err
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("local service %s: model folder %s does not exist (model_uri %s is served from pvc_mount_path %s + %s): %v",
			s.Name, dir, s.ModelURI, s.MountPath, s.ModelPath, err)
	}
	if err := os.MkdirAll(ProcessesDir(b.StateDir), 0o755); err != nil {
		return nil, fmt.Errorf("local state folder: %w", err)
	}
	httpPort, err := netport.Free()
	if err != nil {
		return nil, err
	}
	grpcPort, err := netport.Free()
	if err != nil {
		return nil, err
	}
	for grpcPort == httpPort {
		if grpcPort, err = netport.Free(); err != nil {
			return nil, err
		}
	}
	logFile, err := os.CreateTemp(ProcessesDir(b.StateDir), key+".*.starting.log")
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	// The ClusterServingRuntime's arguments, then the service's own (which win, as KServe
	// appends them).
	args := append([]string{"--model_name", s.Name, "--model_dir", dir,
		"--http_port", strconv.Itoa(httpPort), "--grpc_port", strconv.Itoa(grpcPort)}, servingRuntimeFlags...)
	args = append(args, s.RuntimeArgs...)
	cmd := exec.Command(runtimeBin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = dir
	// Its own session: the step's end, or a Ctrl-C in the step's terminal, does not stop the
	// service; the local runner stops the process group it records.
	rt, err := procgroup.StartDetached(cmd)
	if err != nil {
		os.Remove(logFile.Name())
		return nil, fmt.Errorf("local service %s: start %s: %w", s.Name, runtimeBin, err)
	}
	p := &proc{
		rec: Record{PID: cmd.Process.Pid, PGID: cmd.Process.Pid, Name: key, ModelURI: s.ModelURI, RuntimeArgs: s.RuntimeArgs,
			URL: "http://127.0.0.1:" + strconv.Itoa(httpPort), GRPC: "127.0.0.1:" + strconv.Itoa(grpcPort)},
		log: logFile.Name(), dir: dir, proc: rt,
	}
	b.mu.Lock()
	if b.started == nil {
		b.started = map[string]*proc{}
	}
	b.started[key] = p
	b.mu.Unlock()
	return p, nil
}

// Wait waits for the process Apply started to answer /v2/health/ready, then records it as the
// service and stops the version it replaces. A process that exits, or whose model fails to load
// (the runtime then stays up but not ready, with the reason in the answer), ends the wait at
// once; so does ctx. The process is stopped then, and the old version keeps serving. The claim's
// serving record then names the model (and the one it replaced).
func (b *Backend) Wait(ctx context.Context, s *deploy.Service, progress func(string)) (*deploy.Endpoint, error) {
	ep, err := b.finish(ctx, s.Name, progress)
	if err != nil {
		return nil, err
	}
	if err := b.recordServing(s, "", true); err != nil {
		return nil, err
	}
	return ep, nil
}

// finish waits for the process started as key to be ready, records it under key, and stops the
// process recorded there before (a rollout) once the record names the new one. A process that
// does not become ready is stopped and its log kept at FailedLogPath.
func (b *Backend) finish(ctx context.Context, key string, progress func(string)) (*deploy.Endpoint, error) {
	b.mu.Lock()
	p := b.started[key]
	b.mu.Unlock()
	if p == nil {
		return nil, fmt.Errorf("local service %s was not started by this process", key)
	}
	progress(fmt.Sprintf("runtime pid %d serving %s on %s (gRPC %s)", p.rec.PID, p.dir, p.rec.URL, p.rec.GRPC))
	err := b.waitReady(ctx, p, progress)
	if err != nil {
		p.failure = err.Error()
		b.stop(p.rec, p.proc)
		failed := FailedLogPath(b.StateDir, key)
		if os.Rename(p.log, failed) == nil {
			p.log = failed
		}
		return nil, err
	}
	old, oldErr := ReadRecord(b.StateDir, key)
	if err := writeRecord(b.StateDir, p.rec); err != nil {
		b.stop(p.rec, p.proc)
		return nil, err
	}
	// The old version's log goes with it; the new one takes the service's log name.
	_ = os.Rename(p.log, LogPath(b.StateDir, key))
	p.log = LogPath(b.StateDir, key)
	progress(fmt.Sprintf("recorded in %s, log %s", RecordPath(b.StateDir, key), p.log))
	if oldErr == nil && old.PID != p.rec.PID && procgroup.Alive(old.PID) {
		b.retire(key, *old, p.rec.PID, progress)
	}
	return p.rec.endpoint(modelName(key)), nil
}

// retire stops a version that no record names any more, after SwitchGrace, for the clients
// that read its record just before.
func (b *Backend) retire(key string, old Record, successor int, progress func(string)) {
	grace := b.SwitchGrace
	if grace == 0 {
		grace = time.Second
	}
	progress(fmt.Sprintf("rollout: %s now served by pid %d; stopping the previous version (pid %d, %s) after %s", modelName(key), successor, old.PID, old.URL, grace))
	time.Sleep(grace)
	b.stop(old, nil)
	progress(fmt.Sprintf("previous version (pid %d) stopped", old.PID))
}

func (r Record) endpoint(model string) *deploy.Endpoint {
	return &deploy.Endpoint{URL: r.URL, ExternalURL: r.URL, GRPCAddress: r.GRPC, ModelName: model}
}

// readyAnswer is the runtime's /v2/health/ready error body.
type readyAnswer struct {
	Error string `json:"error"`
}

// stillLoading is how the runtime says a model has not finished loading (runtime/registry);
// any other not-ready answer is final: the runtime does not retry a failed load by itself.
const stillLoading = "still loading"

func (b *Backend) waitReady(ctx context.Context, p *proc, progress func(string)) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	url := p.rec.URL + "/v2/health/ready"
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := ""
	report := func(state string) {
		p.lastReady = state
		if state != last {
			last = state
			progress("runtime: " + state)
		}
	}
	for {
		select {
		case <-p.proc.Done():
			return fmt.Errorf("runtime pid %d exited before it was ready: %v", p.rec.PID, p.proc.Err())
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-tick.C:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := hc.Do(req)
		if err != nil {
			report("not listening yet")
			continue
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			report("ready")
			return nil
		}
		var ans readyAnswer
		msg := strings.TrimSpace(string(body))
		if json.Unmarshal(body, &ans) == nil && ans.Error != "" {
			msg = ans.Error
		}
		report(fmt.Sprintf("not ready (%d): %s", resp.StatusCode, msg))
		if resp.StatusCode == http.StatusServiceUnavailable && !strings.Contains(msg, stillLoading) {
			return fmt.Errorf("the runtime cannot serve the model: %s", msg)
		}
	}
}

// Describe shows the last version's state and the tail of its log.
func (b *Backend) Describe(ctx context.Context, s *deploy.Service) string {
	b.mu.Lock()
	p := b.started[s.Name]
	b.mu.Unlock()
	if p == nil {
		return "no runtime process was started for " + s.Name
	}
	var out strings.Builder
	fmt.Fprintf(&out, "runtime pid %d (model folder %s, %s)", p.rec.PID, p.dir, p.rec.URL)
	select {
	case <-p.proc.Done():
		fmt.Fprintf(&out, " ended: %v\n", p.proc.Err())
	default:
		out.WriteString(" still running\n")
	}
	if p.lastReady != "" {
		fmt.Fprintf(&out, "last /v2/health/ready: %s\n", p.lastReady)
	}
	if rec, err := ReadRecord(b.StateDir, s.Name); err == nil && rec.PID != p.rec.PID && procgroup.Alive(rec.PID) {
		fmt.Fprintf(&out, "the previous version (pid %d, %s) keeps serving\n", rec.PID, rec.URL)
	}
	n := b.LogTailLines
	if n == 0 {
		n = 20
	}
	fmt.Fprintf(&out, "log tail (%s):\n%s", p.log, tail(p.log, n))
	return out.String()
}

// tail is the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// writeRecord replaces the record atomically: a reader sees the old or the new one, whole.
func writeRecord(stateDir string, r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	path := RecordPath(stateDir, r.Name)
	if err := replaceFile(path, append(b, '\n')); err != nil {
		return fmt.Errorf("record %s: %w", path, err)
	}
	return nil
}

// replaceFile writes data to path through a temporary file beside it renamed into place: a
// reader sees the old content or the new, whole.
func replaceFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// stop sends SIGTERM to the process group (the runtime drains in-flight requests), and SIGKILL
// when it has not ended within StopTimeout. started is the process when this process started it
// (and reaps it), nil for a recorded one.
func (b *Backend) stop(r Record, started *procgroup.Process) {
	timeout := b.StopTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	if started != nil {
		started.Stop(timeout)
		return
	}
	pgid := r.PGID
	if pgid <= 0 {
		pgid = r.PID
	}
	procgroup.StopGroup(pgid, timeout)
}
