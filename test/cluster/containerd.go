package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// containerdConfig is the CRI configuration of a real node's containerd: every path under its
// folder, the pause image built at start as the sandbox image, the bridge network of cniDir.
// restrict_oom_score_adj: root here may lack CAP_SYS_RESOURCE, and the kubelet's -998 for a
// sandbox otherwise fails runc create ("can't get final child's PID from pipe: EOF").
// disable_apparmor keeps containerd from loading a profile into the host's kernel.
const containerdConfig = `version = 2
root = "{{dir}}/root"
state = "{{dir}}/state"

[grpc]
  address = "{{dir}}/containerd.sock"

[ttrpc]
  address = "{{dir}}/containerd.sock.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "{{dir}}/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{{pause}}"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  enable_selinux = false
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "{{dir}}/runc"

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{{cnibin}}"
    conf_dir = "{{cniconf}}"
`

// cniBinDir is where Debian's containernetworking-plugins puts the plugins.
const cniBinDir = "/usr/lib/cni"

// containerd is a real node's container runtime.
type containerd struct {
	dir    string
	socket string
	ctr    string
	proc   *process
}

// startContainerd starts containerd with its root, state, socket and runc state under dir, and
// waits until it answers.
func (c *Cluster) startContainerd(ctx context.Context, dir, cniConf string) (*containerd, error) {
	bin, err := exec.LookPath("containerd")
	if err != nil {
		return nil, err
	}
	ctr, err := exec.LookPath("ctr")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return nil, err
	}
	cfg := strings.NewReplacer("{{dir}}", dir, "{{pause}}", PauseImage, "{{cnibin}}", cniBinDir, "{{cniconf}}", cniConf).Replace(containerdConfig)
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	d := &containerd{dir: dir, socket: filepath.Join(dir, "containerd.sock"), ctr: ctr}
	if d.proc, err = c.start("containerd", bin, []string{"--config", cfgPath, "--log-level", "warn"}, nil); err != nil {
		return nil, err
	}
	return d, waitReady(ctx, d.proc, 30*time.Second, func(ctx context.Context) error {
		_, err := d.run(ctx, "version")
		return err
	})
}

// run runs ctr against this containerd in Kubernetes' namespace.
func (d *containerd) run(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, d.ctr, append([]string{"--address", d.socket, "--namespace", "k8s.io"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// importImage imports an OCI or Docker archive (buildah's oci-archive, the pause image) into the
// node's image store, where the kubelet finds it without a pull.
func (d *containerd) importImage(ctx context.Context, archive string) error {
	_, err := d.run(ctx, "images", "import", archive)
	return err
}

// removeTasks kills and deletes every container task left (the kubelet normally stops them), so
// their shims exit.
func (d *containerd) removeTasks(ctx context.Context) {
	out, err := d.run(ctx, "tasks", "list", "--quiet")
	if err != nil {
		return
	}
	for _, id := range strings.Fields(out) {
		_, _ = d.run(ctx, "tasks", "kill", "--signal", "SIGKILL", id)
	}
	for _, id := range strings.Fields(out) {
		_, _ = d.run(ctx, "tasks", "delete", "--force", id)
	}
}

// runningTasks counts the tasks containerd still runs.
func (d *containerd) runningTasks(ctx context.Context) int {
	out, err := d.run(ctx, "tasks", "list", "--quiet")
	if err != nil {
		return 0
	}
	return len(strings.Fields(out))
}

// killShims ends the shims started by this containerd, which leave its process group (they run
// in sessions of their own) and outlive it; they name its socket on their command line.
func (d *containerd) killShims() {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte("containerd-shim")) || !bytes.Contains(cmdline, []byte(d.socket)) {
			continue
		}
		// The shim's children are its containers' first processes, each its pid namespace's
		// init: killing one ends its container.
		for _, child := range childPIDs(pid) {
			_ = syscall.Kill(child, syscall.SIGKILL)
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// childPIDs are the processes whose parent is pid.
func childPIDs(pid int) []int {
	var out []int
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		c, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", p.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after its closing parenthesis.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 {
			if f := strings.Fields(string(stat[i+1:])); len(f) > 1 && f[1] == strconv.Itoa(pid) {
				out = append(out, c)
			}
		}
	}
	return out
}
