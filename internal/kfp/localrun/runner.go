// Package localrun runs a compiled Kubeflow Pipelines package on one machine, as KFP would run it
// in a cluster: it reads the PipelineSpec IR and the Kubernetes platform document, orders the root
// DAG, builds each task's ExecutorInput as KFP's driver does, resolves the container's placeholders
// as KFP's launcher does, and runs each step as a local process of the binary its command names,
// with a folder standing for each PersistentVolumeClaim. It is what KFP's Python SDK offers as
// kfp.local's subprocess runner.
//
// Local layout under the work folder:
//
//	pvc/<claim>/                      the claim: a step's pvc_mount_path (or pvc_local_path) input
//	                                  equal to the platform's mountPath becomes this folder
//	state/processes/<name>.json       processes that outlive their step (the local model server)
//	pipeline-root/<pipeline>/<run>/   the run: KFP's artifact layout <task>/<uuid>/<artifact>
//	                                  (artifact URIs are file:// URIs of these files),
//	                                  summary.json and report.html
package localrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	"github.com/kubeflow/pipelines/kubernetes_platform/go/kubernetesplatform"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	claimlayout "github.com/gangboost/gangboost/internal/contract/claim"
	"github.com/gangboost/gangboost/internal/kfp"
)

// The environment every step gets: the components' contract (package kfp), and the run's mark.
const (
	EnvBackend    = kfp.EnvBackend
	EnvBinDir     = kfp.EnvBinDir
	EnvLocalState = kfp.EnvLocalState
	// EnvLocalRun carries the run's ID into every step, and so into every process a step starts:
	// the mark by which the runner finds what a run left behind.
	EnvLocalRun = "GANGBOOST_LOCAL_RUN"
)

// PVCPathInputs are the component inputs through which a step sees its claim: pvc_mount_path
// (the components' contract) and pvc_local_path (launch-xgboostjob's: where the launching step sees
// the claim, when its trainer pods mount it elsewhere). A local process cannot mount, so each of
// these inputs whose value equals a pvcMount's mountPath becomes the folder standing for the claim.
var PVCPathInputs = []string{"pvc_mount_path", "pvc_local_path"}

// The step backends a run may ask the components for (GANGBOOST_BACKEND).
const (
	// BackendLocal: the job runs as local processes, the model server on localhost.
	BackendLocal = "local"
	// BackendKubernetes: each step acts on the cluster of its KUBECONFIG (an XGBoostJob, an
	// InferenceService), as it would in a KFP pod; only the steps themselves run here.
	BackendKubernetes = "kubernetes"
)

// Options configure a local run.
type Options struct {
	Package *Package
	// Backend is BackendLocal (the default) or BackendKubernetes.
	Backend string
	// Claims maps a claim name to the folder that holds its files here (with BackendKubernetes,
	// the folder behind the cluster's PersistentVolume); default WorkDir/pvc/<claim>.
	Claims map[string]string
	// Params are the --param name=value overrides.
	Params map[string]string
	// WorkDir holds the claims, the process records and the runs.
	WorkDir string
	// BinDir holds the binaries the executors' commands name.
	BinDir string
	// KeepServing leaves the recorded processes (the model server) running after a successful run
	// until ctx ends.
	KeepServing bool
	// Out receives progress lines and the steps' output, prefixed with the task's name: a burst
	// of a step's lines, then at most relayRate a second, saying how many it left out (the
	// step's log file has them).
	Out io.Writer
	// Grace is how long a stopped process group has between TERM and KILL (default 10s).
	Grace time.Duration
	// Executor runs each step's container; default a local process of the binary in BinDir.
	Executor Executor
	// Finished, when set, is called once the tasks are done (or one failed), with the summary and
	// report written and the recorded processes still running.
	Finished func(*Result)
}

// Result is what a run did.
type Result struct {
	Run     RunInfo `json:"run"`
	WorkDir string  `json:"work_dir"`
	// Claims are the folders of claims given in Options.Claims; others are under WorkDir/pvc.
	Claims     map[string]string `json:"claims,omitempty"`
	Parameters map[string]any    `json:"parameters"`
	Tasks      []*TaskResult     `json:"tasks"`
	Processes  []Process         `json:"processes,omitempty"`
	State      string            `json:"state"`
	Error      string            `json:"error,omitempty"`
	// Seconds is the run's wall time, from reading the parameters to the last task's end.
	Seconds    float64 `json:"seconds"`
	Summary    string  `json:"summary_file"`
	Report     string  `json:"report_file"`
	outputs    map[string]*TaskOutputs
	params     map[string]*structpb.Value
	started    time.Time
	finishedAt time.Time
}

// Task states, as KFP names them.
const (
	StateSucceeded = "SUCCEEDED"
	StateFailed    = "FAILED"
	StateCancelled = "CANCELED"
	StatePending   = "PENDING"
)

// TaskResult is one task of the run.
type TaskResult struct {
	Name      string                       `json:"name"`
	Component string                       `json:"component"`
	State     string                       `json:"state"`
	Seconds   float64                      `json:"seconds,omitempty"`
	ExitCode  int                          `json:"exit_code,omitempty"`
	Error     string                       `json:"error,omitempty"`
	LogFile   string                       `json:"log_file,omitempty"`
	LogTail   []string                     `json:"log_tail,omitempty"`
	Notes     []string                     `json:"notes,omitempty"`
	Root      string                       `json:"task_root,omitempty"`
	Mounts    map[string]string            `json:"mounts,omitempty"`
	Inputs    map[string]any               `json:"inputs,omitempty"`
	Outputs   map[string]any               `json:"outputs,omitempty"`
	Artifacts map[string][]ArtifactSummary `json:"artifacts,omitempty"`
}

// ArtifactSummary is an output artifact as the run recorded it.
type ArtifactSummary struct {
	Type     string         `json:"type"`
	URI      string         `json:"uri"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// StepError is a failed step: its exit code (0 when it exited 0 but its outputs were wrong), the
// error and the last lines it printed.
type StepError struct {
	Task     string
	ExitCode int
	Err      error
	Tail     []string
}

func (e *StepError) Error() string { return fmt.Sprintf("task %s failed: %v", e.Task, e.Err) }
func (e *StepError) Unwrap() error { return e.Err }

// ErrInterrupted is returned when ctx ended before the tasks were done.
var ErrInterrupted = errors.New("run interrupted")

// Run runs the package's root DAG, one task at a time in dependency order. It returns the result
// (also when a task failed) and the first error. Every process a step started is stopped before it
// returns, except the recorded ones under KeepServing, which are stopped when ctx ends.
func Run(ctx context.Context, opts Options) (*Result, error) {
	if opts.Package == nil {
		return nil, errors.New("no pipeline package")
	}
	if err := runnable(opts.Package); err != nil {
		return nil, err
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.Grace <= 0 {
		opts.Grace = 10 * time.Second
	}
	switch opts.Backend {
	case "":
		opts.Backend = BackendLocal
	case BackendLocal, BackendKubernetes:
	default:
		return nil, fmt.Errorf("backend %q: want %s or %s", opts.Backend, BackendLocal, BackendKubernetes)
	}
	workDir, err := filepath.Abs(opts.WorkDir)
	if err != nil {
		return nil, err
	}
	binDir, err := filepath.Abs(opts.BinDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return nil, err
	}
	unlock, err := lockWorkDir(workDir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	r := &runner{opts: opts, workDir: workDir, binDir: binDir, stateDir: filepath.Join(workDir, "state"), mu: &sync.Mutex{}}
	r.processes = &processes{r: r}
	if r.opts.Executor == nil {
		r.opts.Executor = r.processes
	}
	return r.run(ctx)
}

type runner struct {
	opts     Options
	workDir  string
	binDir   string
	stateDir string
	runID    string
	mu       *sync.Mutex // serializes writes to opts.Out
	// processes is the default executor, closed when the run ends.
	processes *processes
}

func (r *runner) printf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.opts.Out, format, args...)
}

func (r *runner) run(ctx context.Context) (res *Result, err error) {
	if err := os.MkdirAll(ProcessesDir(r.stateDir), 0o755); err != nil {
		return nil, err
	}
	// Records left by a run that could not clean up (killed with SIGKILL) are stopped first: the
	// work folder is locked, so no other run owns them.
	if stale, err := StopProcesses(r.stateDir, r.opts.Grace); err != nil {
		return nil, err
	} else {
		for _, p := range stale {
			r.printf("stopped %s (pid %d), left running by an earlier run\n", p.Name, p.PID)
		}
	}
	defer r.processes.close()
	spec := r.opts.Package.Spec
	run := newRunInfo(spec.GetPipelineInfo().GetName(), "file://"+filepath.Join(r.workDir, "pipeline-root"))
	r.runID = run.RunID
	res = &Result{Run: run, WorkDir: r.workDir, Claims: r.opts.Claims, State: StatePending, outputs: map[string]*TaskOutputs{}, started: time.Now()}
	runDir, err := run.RunDir()
	if err != nil {
		return nil, err
	}
	res.Summary = filepath.Join(runDir, "summary.json")
	res.Report = filepath.Join(runDir, "report.html")
	params, err := PipelineParameters(spec, r.opts.Params)
	if err != nil {
		return nil, err
	}
	res.params = params
	res.Parameters = valuesToAny(params)
	order, err := Order(spec.GetRoot().GetDag())
	if err != nil {
		return nil, err
	}
	for _, name := range order {
		res.Tasks = append(res.Tasks, &TaskResult{Name: name, State: StatePending,
			Component: spec.GetRoot().GetDag().GetTasks()[name].GetComponentRef().GetName()})
	}
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, err
	}
	r.printf("run %s of pipeline %s: %d tasks (%s)\n  run folder %s\n", run.RunName, run.PipelineName, len(order),
		strings.Join(order, " -> "), runDir)

	runErr := r.runTasks(ctx, run, res)
	res.finishedAt = time.Now()
	res.Seconds = res.finishedAt.Sub(res.started).Seconds()
	switch {
	case runErr == nil:
		res.State = StateSucceeded
	case errors.Is(runErr, ErrInterrupted):
		res.State = StateCancelled
		res.Error = runErr.Error()
	default:
		res.State = StateFailed
		res.Error = runErr.Error()
	}
	res.Processes, _ = ReadProcesses(r.stateDir)
	if err := writeSummary(res); err != nil && runErr == nil {
		runErr = err
	}
	if err := writeReport(res); err != nil && runErr == nil {
		runErr = err
	}
	if r.opts.Finished != nil {
		r.opts.Finished(res)
	}
	if runErr == nil && r.opts.KeepServing && len(res.Processes) > 0 {
		for _, p := range res.Processes {
			r.printf("serving: %s %s (pid %d)\n", p.Name, p.URL, p.PID)
		}
		r.printf("--keep-serving: press Ctrl-C to stop\n")
		<-ctx.Done()
	}
	r.cleanup()
	return res, runErr
}

// cleanup stops the recorded processes, then anything else still carrying the run's mark in its
// environment (a process that escaped both its step's group and the records).
func (r *runner) cleanup() {
	stopped, err := StopProcesses(r.stateDir, r.opts.Grace)
	if err != nil {
		r.printf("warning: %v\n", err)
	}
	for _, p := range stopped {
		r.printf("stopped %s (pid %d)\n", p.Name, p.PID)
	}
	mark := EnvLocalRun + "=" + r.runID
	stray := ProcessesWithEnv(mark)
	if len(stray) == 0 {
		return
	}
	r.printf("warning: %d processes started by the run's steps were still running (pids %v); stopping them\n", len(stray), stray)
	for _, pid := range stray {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	deadline := time.Now().Add(r.opts.Grace)
	for time.Now().Before(deadline) && len(ProcessesWithEnv(mark)) > 0 {
		time.Sleep(50 * time.Millisecond)
	}
	for _, pid := range ProcessesWithEnv(mark) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// A killed process is gone only once the kernel has torn it down: the run ends after that,
	// so nothing of it is running when Run returns.
	deadline = time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && len(ProcessesWithEnv(mark)) > 0 {
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *runner) runTasks(ctx context.Context, run RunInfo, res *Result) error {
	n := len(res.Tasks)
	for i, tr := range res.Tasks {
		if ctx.Err() != nil {
			return ErrInterrupted
		}
		label := fmt.Sprintf("[step %d/%d] %s", i+1, n, tr.Name)
		start := time.Now()
		r.printf("%s started\n", label)
		err := r.runTask(ctx, run, res, tr)
		tr.Seconds = time.Since(start).Seconds()
		if err != nil {
			var se *StepError
			if errors.As(err, &se) {
				tr.ExitCode = se.ExitCode
				tr.LogTail = se.Tail
			}
			tr.Error = err.Error()
			if ctx.Err() != nil {
				tr.State = StateCancelled
				r.printf("%s stopped after %.1fs: interrupted\n", label, tr.Seconds)
				return fmt.Errorf("%w during task %s", ErrInterrupted, tr.Name)
			}
			tr.State = StateFailed
			r.printf("%s failed in %.1fs: %v\n", label, tr.Seconds, err)
			if se != nil && len(se.Tail) > 0 {
				r.printf("--- last %d lines of %s ---\n%s\n---\n", len(se.Tail), tr.Name, strings.Join(se.Tail, "\n"))
			}
			return err
		}
		tr.State = StateSucceeded
		r.printf("%s succeeded in %.1fs\n", label, tr.Seconds)
	}
	return nil
}

func (r *runner) runTask(ctx context.Context, run RunInfo, res *Result, tr *TaskResult) error {
	pkg := r.opts.Package
	task := pkg.Spec.GetRoot().GetDag().GetTasks()[tr.Name]
	comp, ok := pkg.Spec.GetComponents()[task.GetComponentRef().GetName()]
	if !ok {
		return fmt.Errorf("task %s: the pipeline has no component %q", tr.Name, task.GetComponentRef().GetName())
	}
	if comp.GetDag() != nil {
		return fmt.Errorf("task %s: nested pipelines (component %s is a DAG) are not supported by the local runner", tr.Name, tr.Component)
	}
	execLabel := comp.GetExecutorLabel()
	container := pkg.Executors[execLabel].GetContainer()
	if container == nil {
		return fmt.Errorf("task %s: executor %q is not a container (importers and resolvers are not supported by the local runner)", tr.Name, execLabel)
	}
	inputs, err := ResolveInputs(run, res.params, tr.Name, task, comp, res.outputs)
	if err != nil {
		return err
	}
	outputs, taskRoot, err := ProvisionOutputs(run, tr.Name, comp.GetOutputDefinitions())
	if err != nil {
		return err
	}
	in := &pipelinespec.ExecutorInput{Inputs: inputs, Outputs: outputs}
	tr.Root = taskRoot

	mounts, claims, notes, err := r.mountClaims(tr.Name, pkg.Kubernetes[execLabel].GetPvcMount(), res, in, comp)
	if err != nil {
		return err
	}
	tr.Mounts = mounts
	withDefaults := WithDefaults(in, comp)
	tr.Inputs = valuesToAny(withDefaults.GetInputs().GetParameterValues())
	if err := prepareOutputFolders(withDefaults); err != nil {
		return fmt.Errorf("task %s: %w", tr.Name, err)
	}
	executorInput, err := protojson.Marshal(withDefaults)
	if err != nil {
		return fmt.Errorf("task %s: encode executor input: %w", tr.Name, err)
	}
	argv, cmdNotes, err := compileCommand(in, withDefaults, executorInput, container.GetCommand(), container.GetArgs())
	if err != nil {
		return fmt.Errorf("task %s: %w", tr.Name, err)
	}
	tr.Notes = append(notes, cmdNotes...)
	for _, note := range tr.Notes {
		r.printf("[%s] note: %s\n", tr.Name, note)
	}
	// The very bytes the step gets as {{$}}, so the record is what it received.
	if err := os.WriteFile(filepath.Join(taskRoot, "executor_input.json"), executorInput, 0o644); err != nil {
		return fmt.Errorf("task %s: %w", tr.Name, err)
	}
	tr.LogFile = filepath.Join(taskRoot, "executor-logs")
	logFile, err := os.Create(tr.LogFile)
	if err != nil {
		return err
	}
	defer logFile.Close()
	output := newRelay(r.opts.Out, r.mu, tr.Name, logFile, tr.LogFile)
	tail := output.tail
	code, err := r.opts.Executor.Execute(ctx, &Container{
		Task: tr.Name, Image: container.GetImage(), Argv: argv, Env: r.stepEnv(container), Claims: claims,
		PipelineRoot: filepath.Join(r.workDir, "pipeline-root"),
		Output:       output.line,
	})
	output.close()
	if err != nil {
		return &StepError{Task: tr.Name, ExitCode: code, Err: err, Tail: tail.get()}
	}
	out, err := ReadExecutorOutput(outputs.GetOutputFile())
	if err != nil {
		return &StepError{Task: tr.Name, Err: err, Tail: tail.get()}
	}
	collected, err := CollectOutputs(in, out, comp)
	if err != nil {
		return &StepError{Task: tr.Name, Err: err, Tail: tail.get()}
	}
	res.outputs[tr.Name] = collected
	tr.Outputs = valuesToAny(collected.Parameters)
	tr.Artifacts = artifactSummaries(collected.Artifacts)
	return nil
}

// mountClaims resolves the executor's pvcMounts as KFP's driver does (makeVolumeMountPatch: the
// claim from a constant, a pipeline parameter or an upstream output; a non-empty string). It
// returns each mount path's folder standing for the claim and its claim. For an executor that
// does not mount claims (a local process), it makes those folders and points the task's
// pvc_mount_path at the folder when it equals the mount path.
func (r *runner) mountClaims(taskName string, mounts []*kubernetesplatform.PvcMount, res *Result, in *pipelinespec.ExecutorInput,
	comp *pipelinespec.ComponentSpec) (map[string]string, map[string]string, []string, error) {
	withDefaults := WithDefaults(in, comp).GetInputs().GetParameterValues()
	pathInputs := r.claimPathInputs(comp)
	if !r.opts.Executor.MountsClaims() {
		if err := checkClaimPaths(taskName, mounts, pathInputs, withDefaults); err != nil {
			return nil, nil, nil, err
		}
	}
	if len(mounts) == 0 {
		return nil, nil, nil, nil
	}
	folders, claims := map[string]string{}, map[string]string{}
	var notes []string
	for _, m := range mounts {
		claim, err := resolveClaim(res, m)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("task %s: failed to resolve pvc name: %w", taskName, err)
		}
		if claim == "" || m.GetMountPath() == "" {
			return nil, nil, nil, fmt.Errorf("task %s: failed to mount volume, missing mountpath or pvc name", taskName)
		}
		if err := claimlayout.CheckName(claim); err != nil {
			return nil, nil, nil, fmt.Errorf("task %s: %w", taskName, err)
		}
		dir, err := claimDir(r.workDir, r.opts.Claims, claim)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("task %s: %w", taskName, err)
		}
		claims[m.GetMountPath()] = claim
		folders[m.GetMountPath()] = dir
		if r.opts.Executor.MountsClaims() {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, nil, err
		}
		var mapped []string
		for _, name := range pathInputs {
			if v := stringValue(withDefaults[name]); v != "" && filepath.Clean(v) == filepath.Clean(m.GetMountPath()) {
				in.Inputs.ParameterValues[name] = structpb.NewStringValue(dir)
				mapped = append(mapped, name)
			}
		}
		if len(mapped) > 0 {
			notes = append(notes, fmt.Sprintf("claim %s (mounted at %s in a cluster) is %s, given as %s", claim, m.GetMountPath(), dir, strings.Join(mapped, ", ")))
			continue
		}
		notes = append(notes, fmt.Sprintf("claim %s is mounted at %s, which the step cannot see locally: its component has no %s input equal to that path",
			claim, m.GetMountPath(), strings.Join(PVCPathInputs, " or ")))
	}
	return folders, claims, notes, nil
}

// claimPathInputs are the PVCPathInputs the component declares through which this step sees its
// claim. With BackendKubernetes, pvc_mount_path of a component that also has pvc_local_path is
// where the job's pods mount the claim; the step sees it through pvc_local_path.
func (r *runner) claimPathInputs(comp *pipelinespec.ComponentSpec) []string {
	defs := comp.GetInputDefinitions().GetParameters()
	var names []string
	for _, name := range PVCPathInputs {
		if _, declared := defs[name]; !declared {
			continue
		}
		if _, local := defs["pvc_local_path"]; local && name == "pvc_mount_path" && r.opts.Backend == BackendKubernetes {
			continue
		}
		names = append(names, name)
	}
	return names
}

// checkClaimPaths refuses a task whose claim path input is set to a path no pvcMount mounts: a
// local process writes where that input says, so it would write its data to that folder of this
// machine instead of the claim.
func checkClaimPaths(taskName string, mounts []*kubernetesplatform.PvcMount, pathInputs []string, values map[string]*structpb.Value) error {
	var mountPaths []string
	for _, m := range mounts {
		mountPaths = append(mountPaths, m.GetMountPath())
	}
	for _, name := range pathInputs {
		v := stringValue(values[name])
		if v == "" {
			continue
		}
		matched := false
		for _, mp := range mountPaths {
			matched = matched || mp != "" && filepath.Clean(v) == filepath.Clean(mp)
		}
		if matched {
			continue
		}
		where := "mounts no claim (the platform document has no pvcMount for its executor)"
		if len(mountPaths) > 0 {
			where = "mounts its claim at " + strings.Join(mountPaths, ", ") + " (the platform document's pvcMount mountPath)"
		}
		return fmt.Errorf("task %s: input %s is %q, but the executor %s: run locally, the step would write to %s on this machine; make %s equal to the mountPath",
			taskName, name, v, where, v, name)
	}
	return nil
}

func stringValue(v *structpb.Value) string {
	if s, ok := v.GetKind().(*structpb.Value_StringValue); ok {
		return s.StringValue
	}
	return ""
}

// stepEnv is the executor's env with the step environment over it.
func (r *runner) stepEnv(c *pipelinespec.PipelineDeploymentConfig_PipelineContainerSpec) []string {
	ours := map[string]string{EnvBackend: r.opts.Backend, EnvBinDir: r.binDir, EnvLocalState: r.stateDir, EnvLocalRun: r.runID}
	var env []string
	for _, e := range c.GetEnv() {
		if _, override := ours[e.GetName()]; !override {
			env = append(env, e.GetName()+"="+e.GetValue())
		}
	}
	keys := make([]string, 0, len(ours))
	for k := range ours {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+ours[k])
	}
	return env
}

// prepareOutputFolders makes the folders the step writes its outputs to (the launcher's
// prepareOutputFolders, plus the ExecutorOutput's).
func prepareOutputFolders(in *pipelinespec.ExecutorInput) error {
	dirs := []string{filepath.Dir(in.GetOutputs().GetOutputFile())}
	for _, p := range in.GetOutputs().GetParameters() {
		dirs = append(dirs, filepath.Dir(p.GetOutputFile()))
	}
	for _, l := range in.GetOutputs().GetArtifacts() {
		for _, a := range l.GetArtifacts() {
			path, err := kfp.LocalPathForURI(a.GetUri())
			if err != nil {
				return err
			}
			dirs = append(dirs, filepath.Dir(path))
		}
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return nil
}

func newRunInfo(pipelineName, root string) RunInfo {
	id := newUUID()
	now := time.Now().UTC()
	return RunInfo{
		PipelineName: pipelineName,
		RunID:        id,
		RunName:      pipelineName + "-" + id[:5],
		DisplayName:  pipelineName + " " + now.Format("2006-01-02 15-04-05"),
		PipelineRoot: root,
		Created:      now,
	}
}

func valuesToAny(m map[string]*structpb.Value) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v.AsInterface()
	}
	return out
}

func artifactSummaries(m map[string]*pipelinespec.ArtifactList) map[string][]ArtifactSummary {
	out := map[string][]ArtifactSummary{}
	for name, l := range m {
		for _, a := range l.GetArtifacts() {
			s := ArtifactSummary{Type: a.GetType().GetSchemaTitle(), URI: a.GetUri()}
			if a.GetMetadata() != nil {
				s.Metadata = a.GetMetadata().AsMap()
			}
			out[name] = append(out[name], s)
		}
	}
	return out
}

func writeSummary(res *Result) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(res.Summary, append(b, '\n'), 0o644)
}

// lockWorkDir takes an exclusive lock on the work folder for the run: two runs in one folder would
// share claims and process records.
func lockWorkDir(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("work folder %s is in use by another local run (%v)", dir, err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

// resolveClaim is the driver's resolveInputParameterStr for a pvcMount's claim.
func resolveClaim(res *Result, m *kubernetesplatform.PvcMount) (string, error) {
	var v *structpb.Value
	switch k := m.GetPvcReference().(type) {
	case *kubernetesplatform.PvcMount_Constant:
		v = structpb.NewStringValue(k.Constant)
	case *kubernetesplatform.PvcMount_ComponentInputParameter:
		var ok bool
		if v, ok = res.params[k.ComponentInputParameter]; !ok {
			return "", fmt.Errorf("the pipeline has no input parameter %s", k.ComponentInputParameter)
		}
	case *kubernetesplatform.PvcMount_TaskOutputParameter:
		producer, key := k.TaskOutputParameter.GetProducerTask(), k.TaskOutputParameter.GetOutputParameterKey()
		out, ok := res.outputs[producer]
		if !ok {
			return "", fmt.Errorf("producer task %s has not run", producer)
		}
		if v, ok = out.Parameters[key]; !ok {
			return "", fmt.Errorf("task %s has no output parameter %q", producer, key)
		}
	default:
		return "", fmt.Errorf("volume name not provided")
	}
	s, ok := v.GetKind().(*structpb.Value_StringValue)
	if !ok {
		return "", fmt.Errorf("expected a string but got %T", v.GetKind())
	}
	if s.StringValue == "" {
		return "", fmt.Errorf("expected a non-empty string")
	}
	return s.StringValue, nil
}

// Task returns the named task's result, or nil.
func (res *Result) Task(name string) *TaskResult {
	for _, t := range res.Tasks {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// ClaimPath maps pvc://<claim>/<path> to the file in the folder standing for the claim; false for
// anything that is not such a URI (package claim's rules) or that leaves the claim's folder.
func (res *Result) ClaimPath(uri string) (string, bool) {
	u, err := claimlayout.ParseURI(uri)
	if err != nil {
		return "", false
	}
	dir, err := claimDir(res.WorkDir, res.Claims, u.Claim)
	if err != nil {
		return "", false
	}
	p, err := claimlayout.Join(dir, u.Path)
	return p, err == nil
}

// claimDir is the folder standing for a claim: the one claims gives, else <workDir>/pvc/<claim>.
func claimDir(workDir string, claims map[string]string, claim string) (string, error) {
	if err := pathElement(claim); err != nil {
		return "", fmt.Errorf("claim name: %w", err)
	}
	if dir, ok := claims[claim]; ok {
		return dir, nil
	}
	return under(workDir, "pvc", claim)
}
