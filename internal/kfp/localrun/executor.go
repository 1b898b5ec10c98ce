package localrun

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Container is one step's container as KFP's launcher would start it: the image, the command
// line with its placeholders resolved, the environment and the claims to mount.
type Container struct {
	// Task is the task's name in the root DAG.
	Task string
	// Image is the executor's image.
	Image string
	// Argv is the command and args with placeholders resolved; Argv[0] as the image names it.
	Argv []string
	// Env is the executor's env and the step environment (EnvBackend, ...), NAME=value.
	Env []string
	// Claims maps each pvcMount's mountPath to its claim.
	Claims map[string]string
	// PipelineRoot is the folder of the run's pipeline root on this machine: the step reads
	// its ExecutorInput's files and writes its outputs (ExecutorOutput, parameters, artifacts)
	// under it, by the paths the ExecutorInput names.
	PipelineRoot string
	// Output is called with each line the container prints, in order.
	Output func(line string)
}

// Executor runs a step's container to its end. The runner's own runs it as a local process of
// the binary its command names; an executor on a cluster runs it as a pod.
type Executor interface {
	// MountsClaims reports whether the container sees each claim at its pvcMount's mountPath,
	// as a pod does. When it does not, the step's pvc path inputs equal to a mountPath are
	// pointed at the claim's folder instead.
	MountsClaims() bool
	// Execute runs the container and returns its exit code; err is non-nil when it did not
	// exit 0. When ctx ends first, the container is stopped.
	Execute(ctx context.Context, c *Container) (exitCode int, err error)
}

// processes is the default Executor: each step a process of the binary in the runner's bin
// folder, in its own process group, with the runner's environment under the step's.
type processes struct {
	r  *runner
	mu sync.Mutex
	// steps are the finished steps whose output is still open.
	steps []*step
}

func (p *processes) MountsClaims() bool { return false }

func (p *processes) Execute(ctx context.Context, c *Container) (int, error) {
	bin := filepath.Join(p.r.binDir, filepath.Base(c.Argv[0]))
	if fi, err := os.Stat(bin); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return -1, fmt.Errorf("image %s runs %q, and %s has no such program (build the binaries with `make build`, or point --bin-dir at them)",
			c.Image, c.Argv[0], p.r.binDir)
	}
	argv := append([]string{bin}, c.Argv[1:]...)
	s, err := startStep(argv, p.env(c.Env), c.PipelineRoot, c.Output)
	if err != nil {
		return -1, fmt.Errorf("start %s: %w", bin, err)
	}
	code, _, err := s.wait(ctx, p.r.opts.Grace, func() {
		p.r.printf("[%s] stopping: SIGTERM to its process group, SIGKILL after %v\n", c.Task, p.r.opts.Grace)
	})
	if s.outputOpen() {
		p.mu.Lock()
		p.steps = append(p.steps, s)
		p.mu.Unlock()
	}
	return code, err
}

// env is the runner's environment with the step's variables over it.
func (p *processes) env(step []string) []string {
	set := map[string]bool{}
	for _, kv := range step {
		k, _, _ := strings.Cut(kv, "=")
		set[k] = true
	}
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !set[k] {
			env = append(env, kv)
		}
	}
	return append(env, step...)
}

// close stops reading the output of the finished steps whose pipe a process that left their group
// still holds open.
func (p *processes) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.steps {
		s.close()
	}
}
