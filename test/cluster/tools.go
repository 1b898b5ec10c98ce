package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/gangboost/gangboost/internal/plumbing/repodir"
	"github.com/gangboost/gangboost/test/toolbuild"
)

// Tool is one group of control-plane binaries built from its own module
// under test/cluster/tools. The modules are separate because their
// dependency graphs pin different Kubernetes libraries (v0.30 for KWOK,
// v0.32 for Kubernetes itself, v0.34 for KServe, v0.35 for Volcano, Trainer
// v2 and JobSet, v0.36 for the training operator).
type Tool struct {
	// Name is the prefix of its cache folder and, unless Module is set, the
	// folder of its tools module.
	Name string
	// Module is the folder of the tools module when it differs from Name.
	Module string
	// Version is the upstream release the module requires.
	Version string
	// Binaries maps the binary name to its main package.
	Binaries map[string]string
	// LDFlags are passed to go build; Kubernetes needs its version stamped so
	// clients (kubectl, controller-runtime) can parse the server version.
	LDFlags string
	// Patches complete dependencies the proxy serves only in an older
	// version than the upstream tool needs; the build uses a copy of the
	// module with the patches' files added.
	Patches []Patch
}

// Patch adds files to a copy of one dependency for a tool's build: the
// build runs in a copy of the tools module whose go.mod replaces Module
// with that copy. The files live in the tools module, so they are part of
// the stamp.
type Patch struct {
	// Module and Version name the dependency copied from the module cache.
	Module, Version string
	// Files maps a path inside the copied module to a file of the tools
	// module (not named .go, so the tools module itself does not compile it).
	Files map[string]string
}

const kubeLDFlags = "-s -w" +
	" -X k8s.io/component-base/version.gitVersion=v1.32.2" +
	" -X k8s.io/component-base/version.gitMajor=1" +
	" -X k8s.io/component-base/version.gitMinor=32" +
	" -X k8s.io/component-base/version.gitTreeState=clean"

// Tools lists every binary of the test control plane.
var Tools = []Tool{
	{
		Name:    "kube",
		Version: "v1.32.2",
		Binaries: map[string]string{
			"kube-apiserver":          "k8s.io/kubernetes/cmd/kube-apiserver",
			"kube-controller-manager": "k8s.io/kubernetes/cmd/kube-controller-manager",
		},
		LDFlags: kubeLDFlags,
	},
	{
		// The scheduler of default-scheduler pods (KServe's); a tool of its
		// own over the same module, so adding it left the cached
		// kube-apiserver and kube-controller-manager as they were.
		Name:     "kube-scheduler",
		Module:   "kube",
		Version:  "v1.32.2",
		Binaries: map[string]string{"kube-scheduler": "k8s.io/kubernetes/cmd/kube-scheduler"},
		LDFlags:  kubeLDFlags,
	},
	{
		// The real nodes' kubelet and kube-proxy (Options.RealNodes), from the
		// same Kubernetes release in a module of their own (see its go.mod).
		Name:    "node",
		Version: "v1.32.2",
		Binaries: map[string]string{
			"kubelet":    "k8s.io/kubernetes/cmd/kubelet",
			"kube-proxy": "k8s.io/kubernetes/cmd/kube-proxy",
		},
		LDFlags: kubeLDFlags,
	},
	{
		Name:     "kwok",
		Version:  "v0.6.1",
		Binaries: map[string]string{"kwok": "sigs.k8s.io/kwok/cmd/kwok"},
		LDFlags:  "-s -w",
	},
	{
		Name:     "trainingop",
		Version:  TrainingOperatorVersion,
		Binaries: map[string]string{"training-operator": "github.com/kubeflow/training-operator/cmd/training-operator.v1"},
		LDFlags:  "-s -w",
	},
	{
		Name:     "kserve",
		Version:  KServeVersion,
		Binaries: map[string]string{kserveManagers[KServeVersion]: "github.com/kserve/kserve/cmd/manager"},
		LDFlags:  "-s -w",
	},
	{
		// Kubeflow 1.11's KServe, whose manager pins Kubernetes v0.32 and controller-runtime
		// v0.19: a module of its own.
		Name:     "kserve-v0.15",
		Module:   "kserve015",
		Version:  KServeKubeflowVersion,
		Binaries: map[string]string{kserveManagers[KServeKubeflowVersion]: "github.com/kserve/kserve/cmd/manager"},
		LDFlags:  "-s -w",
	},
	{
		Name:    "volcano",
		Version: volcanoVersion,
		Binaries: map[string]string{
			"vc-scheduler": "volcano.sh/volcano/cmd/scheduler",
			// Its queue controller only: Volcano v1.15's scheduler admits
			// no PodGroup to a queue whose status.state is not Open, which
			// that controller sets.
			"vc-controller-manager": "volcano.sh/volcano/cmd/controller-manager",
		},
		LDFlags: "-s -w",
		Patches: []Patch{{
			Module: "volcano.sh/apis", Version: "v1.14.0",
			Files: map[string]string{
				"pkg/apis/scheduling/v1beta1/zz_gangboost_queue_allocation_gate.go": "patches/queue_allocation_gate.go.in",
			},
		}},
	},
	{
		// Kubeflow Trainer v2 and the JobSet controller it creates its
		// jobs through (Options.TrainerV2).
		Name:     "trainer",
		Version:  TrainerVersion,
		Binaries: map[string]string{"trainer-controller-manager": "github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager"},
		LDFlags:  "-s -w",
	},
	{
		// The Kubeflow Model Registry's server (model-registry proxy on
		// PostgreSQL) and its KServe storage initializer for
		// model-registry:// URIs (test/modelregistry starts them).
		Name:    "modelregistry",
		Version: ModelRegistryVersion,
		Binaries: map[string]string{
			"model-registry":     "github.com/kubeflow/model-registry",
			"model-registry-csi": "github.com/kubeflow/model-registry/cmd/csi",
		},
		LDFlags: "-s -w",
	},
	{
		Name:     "jobset",
		Version:  JobSetVersion,
		Binaries: map[string]string{"jobset-controller": "sigs.k8s.io/jobset"},
		LDFlags:  "-s -w",
	},
}

// ModelRegistryVersion is the Kubeflow Model Registry release of the test plane (Kubeflow 1.10's).
const ModelRegistryVersion = "v0.3.0"

// Binaries holds the absolute path of every control-plane binary by name
// (kube-apiserver, kube-controller-manager, kube-scheduler, kwok,
// training-operator, kserve-manager, vc-scheduler, vc-controller-manager,
// trainer-controller-manager, jobset-controller, etcd).
type Binaries map[string]string

// CacheDir is where built tools are kept: $GANGBOOST_CACHE/cluster, else
// ${XDG_CACHE_HOME:-$HOME/.cache}/gangboost/cluster.
func CacheDir() (string, error) {
	if d := os.Getenv("GANGBOOST_CACHE"); d != "" {
		return filepath.Join(d, "cluster"), nil
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cache dir: neither GANGBOOST_CACHE, XDG_CACHE_HOME nor HOME is set: %w", err)
		}
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "gangboost", "cluster"), nil
}

// ToolsModuleDir is test/cluster/tools of the checkout (repodir.Root: $GANGBOOST_REPO, else the
// checkout above the working directory, where go test runs a package's tests).
func ToolsModuleDir() (string, error) {
	root, err := repodir.Root()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "test", "cluster", "tools"), nil
}

// RepoRoot is the checkout, found as repodir.Root finds it.
var RepoRoot = repodir.Root

func (t Tool) module() string {
	if t.Module != "" {
		return t.Module
	}
	return t.Name
}

// stamp identifies one build: a change of the module files, the patches,
// the binaries, the Go version or the flags gives a new stamp and so a
// rebuild.
func (t Tool) stamp(moduleDir string) (string, error) {
	h := sha256.New()
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(moduleDir, f))
		if err != nil {
			return "", fmt.Errorf("tool %s: %w", t.Name, err)
		}
		fmt.Fprintf(h, "%s\x00%s\x00", f, b)
	}
	goVersion, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return "", fmt.Errorf("tool %s: go env GOVERSION: %w", t.Name, err)
	}
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", t.Version, bytes.TrimSpace(goVersion), t.LDFlags)
	// A binary added to a tool is a rebuild too.
	for _, name := range sortedKeys(t.Binaries) {
		fmt.Fprintf(h, "bin\x00%s\x00%s\x00", name, t.Binaries[name])
	}
	for _, p := range t.Patches {
		fmt.Fprintf(h, "patch\x00%s\x00%s\x00", p.Module, p.Version)
		for _, dst := range sortedKeys(p.Files) {
			b, err := os.ReadFile(filepath.Join(moduleDir, p.Files[dst]))
			if err != nil {
				return "", fmt.Errorf("tool %s: patch of %s: %w", t.Name, p.Module, err)
			}
			fmt.Fprintf(h, "%s\x00%s\x00", dst, b)
		}
	}

	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// BuildReport tells what EnsureTools did for one tool.
type BuildReport struct {
	Tool     string
	Dir      string
	Cached   bool
	Duration time.Duration
}

// EnsureTools builds every tool missing from the cache and returns the
// binaries. Builds run one after the other (two large Go links at once
// need more memory than a small CI runner has) under a file lock, so parallel
// test binaries wait for one build instead of racing.
func EnsureTools(ctx context.Context, log io.Writer) (Binaries, []BuildReport, error) {
	toolsDir, err := ToolsModuleDir()
	if err != nil {
		return nil, nil, err
	}
	cache, err := CacheDir()
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, nil, err
	}
	unlock, err := lockFile(filepath.Join(cache, ".lock"))
	if err != nil {
		return nil, nil, err
	}
	defer unlock()

	bins := Binaries{}
	var reports []BuildReport
	for _, t := range Tools {
		rep, err := t.ensure(ctx, filepath.Join(toolsDir, t.module()), cache, log)
		if err != nil {
			return nil, reports, err
		}
		reports = append(reports, rep)
		for name := range t.Binaries {
			bins[name] = filepath.Join(rep.Dir, name)
		}
	}
	etcd, err := ensureEtcd(ctx, log)
	if err != nil {
		return nil, reports, err
	}
	bins["etcd"] = etcd
	// operator-config is rendered with kubectl's built-in kustomize.
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		return nil, reports, errors.New("kubectl not found in PATH: it renders operator-config (kubectl kustomize); install kubectl 1.27 or newer")
	}
	bins["kubectl"] = kubectl
	return bins, reports, nil
}

func (t Tool) ensure(ctx context.Context, moduleDir, cache string, log io.Writer) (BuildReport, error) {
	stamp, err := t.stamp(moduleDir)
	if err != nil {
		return BuildReport{}, err
	}
	out := filepath.Join(cache, t.Name+"-"+t.Version)
	rep := BuildReport{Tool: t.Name, Dir: out}
	if b, err := os.ReadFile(filepath.Join(out, "stamp")); err == nil && strings.TrimSpace(string(b)) == stamp {
		rep.Cached = true
		return rep, nil
	}
	fmt.Fprintf(log, "cluster tools: building %s %s into %s (first build takes minutes)\n", t.Name, t.Version, out)
	start := time.Now()
	tmp, err := os.MkdirTemp(cache, "."+t.Name+"-build-")
	if err != nil {
		return rep, err
	}
	defer os.RemoveAll(tmp)
	var pkgs []string
	for _, pkg := range t.Binaries {
		pkgs = append(pkgs, pkg)
	}
	args := toolbuild.Args(tmp+string(filepath.Separator), t.LDFlags, pkgs...)
	env := toolbuild.Env()
	buildDir := moduleDir
	if len(t.Patches) > 0 {
		buildDir = filepath.Join(tmp, ".module")
		if err := t.patchedModule(ctx, moduleDir, buildDir, env); err != nil {
			return rep, err
		}
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = buildDir
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stdout = log
	cmd.Stderr = io.MultiWriter(log, &stderr)
	if err := cmd.Run(); err != nil {
		return rep, fmt.Errorf("build %s %s in %s: %w\n%s", t.Name, t.Version, moduleDir, err, tail(stderr.String(), 4000))
	}
	// go build -o dir names each binary after its package folder; rename to
	// the names the control plane uses.
	for name, pkg := range t.Binaries {
		built := filepath.Join(tmp, filepath.Base(pkg))
		if err := os.Rename(built, filepath.Join(tmp, name)); err != nil {
			return rep, fmt.Errorf("build %s: expected binary %s: %w", t.Name, built, err)
		}
	}
	if err := os.RemoveAll(filepath.Join(tmp, ".module")); err != nil {
		return rep, err
	}
	if err := os.WriteFile(filepath.Join(tmp, "stamp"), []byte(stamp+"\n"), 0o644); err != nil {
		return rep, err
	}
	rep.Duration = time.Since(start)
	fmt.Fprintf(tmpLog(tmp), "built %s %s in %s\n", t.Name, t.Version, rep.Duration.Round(time.Second))
	if err := os.RemoveAll(out); err != nil {
		return rep, err
	}
	if err := os.Rename(tmp, out); err != nil {
		return rep, err
	}
	fmt.Fprintf(log, "cluster tools: built %s %s in %s\n", t.Name, t.Version, rep.Duration.Round(time.Second))
	return rep, nil
}

// patchedModule writes into dir a copy of the tools module (go.mod,
// go.sum) whose go.mod replaces each patched dependency with a copy of it
// from the module cache plus the patch's files.
func (t Tool) patchedModule(ctx context.Context, moduleDir, dir string, env []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(moduleDir, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return err
		}
	}
	for i, p := range t.Patches {
		cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", p.Module+"@"+p.Version)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("tool %s: go mod download %s@%s: %w\n%s", t.Name, p.Module, p.Version, err, out)
		}
		var dl struct{ Dir, Error string }
		if err := json.Unmarshal(out, &dl); err != nil || dl.Dir == "" {
			return fmt.Errorf("tool %s: go mod download %s@%s: no folder (%s): %v", t.Name, p.Module, p.Version, dl.Error, err)
		}
		copyDir := filepath.Join(dir, fmt.Sprintf("patched-%d", i))
		if err := copyTree(dl.Dir, copyDir); err != nil {
			return err
		}
		for _, dst := range sortedKeys(p.Files) {
			b, err := os.ReadFile(filepath.Join(moduleDir, p.Files[dst]))
			if err != nil {
				return fmt.Errorf("tool %s: patch of %s: %w", t.Name, p.Module, err)
			}
			if err := os.WriteFile(filepath.Join(copyDir, dst), b, 0o644); err != nil {
				return err
			}
		}
		edit := exec.CommandContext(ctx, "go", "mod", "edit", "-replace="+p.Module+"=./"+filepath.Base(copyDir))
		edit.Dir, edit.Env = dir, env
		if out, err := edit.CombinedOutput(); err != nil {
			return fmt.Errorf("tool %s: go mod edit: %w\n%s", t.Name, err, out)
		}
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// tmpLog appends to the build-info file kept next to the binaries.
func tmpLog(dir string) io.Writer {
	f, err := os.OpenFile(filepath.Join(dir, "build-info"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return io.Discard
	}
	return closingWriter{f}
}

type closingWriter struct{ f *os.File }

func (w closingWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.f.Close()
	return n, err
}

// ensureEtcd finds Debian's etcd (package etcd-server) and installs it with
// apt-get when missing and running as root.
func ensureEtcd(ctx context.Context, log io.Writer) (string, error) {
	if p := os.Getenv("GANGBOOST_ETCD"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("etcd"); err == nil {
		return p, nil
	}
	if os.Geteuid() != 0 {
		return "", errors.New("etcd not found in PATH: install Debian's etcd-server (apt-get install etcd-server) or set GANGBOOST_ETCD")
	}
	fmt.Fprintln(log, "cluster tools: installing etcd-server with apt-get")
	cmd := exec.CommandContext(ctx, "apt-get", "install", "-y", "--no-install-recommends", "etcd-server")
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("apt-get install etcd-server: %w\n%s", err, tail(string(out), 2000))
	}
	return exec.LookPath("etcd")
}

func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
