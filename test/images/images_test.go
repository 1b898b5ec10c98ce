package images

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/internal/plumbing/ci"
	"github.com/gangboost/gangboost/internal/plumbing/repodir"
	"github.com/gangboost/gangboost/test/evaltest"
	"github.com/gangboost/gangboost/test/testbin"
)

// store is a container storage of this test run only, so every run builds from scratch and
// reuses nothing an earlier run left.
var (
	store  string
	binDir string
	// root is the checkout (repodir.Root).
	root     string
	version  string
	registry = "ghcr.io/gangboost"
	built    string // build-images.sh's report: sizes and build times
	// arches are the architectures build-images.sh built the images for: the host's, and the
	// other one of amd64 and arm64 where its cross compiler is installed (always in CI).
	arches []string
)

func TestMain(m *testing.M) {
	code := run(m)
	testbin.Remove()
	os.Exit(code)
}

func run(m *testing.M) int {
	var err error
	if root, err = repodir.Root(); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		return 1
	}
	version = readVersion()
	if !hasTools() {
		if ci.Running() {
			fmt.Fprintln(os.Stderr, "images: buildah, podman and runc are required in CI (scripts/deps.sh installs them)")
			return 1
		}
		fmt.Fprintln(os.Stderr, "images: skipping image tests: buildah, podman or runc missing (apt-get install -y buildah podman runc)")
		return m.Run() // the version checks still run
	}
	if binDir, err = repodir.BinDir(); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		return 1
	}
	for _, b := range []string{"gangboost-runtime", "gangboost-train"} {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			fmt.Fprintf(os.Stderr, "images: %s missing in %s: run make build\n", b, binDir)
			return 1
		}
	}
	dir, err := os.MkdirTemp("", "gangboost-images-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	store = dir
	defer func() {
		// Containers' layers belong to root with odd modes; podman's own reset removes them.
		_ = exec.Command("podman", append(storageFlags(), "system", "reset", "--force")...).Run()
		os.RemoveAll(dir)
	}()
	if err := os.WriteFile(filepath.Join(dir, "containers.conf"), []byte(containersConf), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	arches = []string{runtime.GOARCH}
	if other := otherArch(); other != "" {
		if why := crossToolchainMissing(other); why == "" {
			arches = append(arches, other)
		} else if ci.Running() {
			fmt.Fprintf(os.Stderr, "images: CI builds the images for %s too, but %s (make deps installs it)\n", other, why)
			return 1
		} else {
			fmt.Fprintf(os.Stderr, "images: building for %s only: %s (make deps installs it)\n", runtime.GOARCH, why)
		}
	}
	cmd := exec.Command(filepath.Join(root, "scripts", "build-images.sh"))
	cmd.Env = append(os.Environ(), "BUILDAH_STORAGE="+strings.Join(storageFlags(), " "), "ARCHES="+strings.Join(arches, " "),
		"DIST="+filepath.Join(dir, "dist"), "GANGBOOST_BIN_DIR="+binDir, "VERSION="+version, "REGISTRY="+registry)
	out, err := cmd.CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "images: build-images.sh: %v\n%s", err, out)
		return 1
	}
	built = string(out)
	return m.Run()
}

// containersConf is what podman needs on these hosts: runc (crun fails on hybrid cgroups) and
// ulimits within the hard limits.
const containersConf = `[containers]
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]
[engine]
runtime = "runc"
`

func hasTools() bool {
	for _, t := range []string{"buildah", "podman", "runc"} {
		if _, err := exec.LookPath(t); err != nil {
			return false
		}
	}
	return true
}

func storageFlags() []string {
	return []string{"--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run")}
}

func readVersion() string {
	b, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		panic(err)
	}
	return strings.TrimSpace(string(b))
}

func image(name string) string { return registry + "/" + name + ":" + version }

// podman runs podman on the test's storage, never pulling.
func podman(ctx context.Context, args ...string) *exec.Cmd {
	full := append(storageFlags(), args...)
	if len(args) > 0 && args[0] == "run" {
		full = append(append(storageFlags(), "run", "--pull=never"), args[1:]...)
	}
	cmd := exec.CommandContext(ctx, "podman", full...)
	cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+filepath.Join(store, "containers.conf"))
	return cmd
}

func requireImages(t *testing.T) {
	t.Helper()
	if store == "" {
		t.Skip("buildah, podman or runc missing")
	}
}

func TestImagesBuiltFromScratch(t *testing.T) {
	requireImages(t)
	t.Logf("build-images.sh:\n%s", built)
	for _, name := range []string{"gangboost-runtime", "gangboost"} {
		for _, arch := range arches {
			if !strings.Contains(built, "image "+image(name)+" linux/"+arch+":") {
				t.Errorf("no report of %s for %s in:\n%s", image(name), arch, built)
			}
			if _, err := os.Stat(archive(name, arch)); err != nil {
				t.Errorf("OCI archive of %s for %s: %v", name, arch, err)
			}
		}
		if _, err := os.Stat(filepath.Join(store, "dist", name+"-"+version+".tar")); err != nil {
			t.Errorf("OCI archive of %s for the host: %v", name, err)
		}
		out, err := podman(context.Background(), "image", "inspect", "--format", "{{json .Labels}} {{.Size}} {{.Config.User}}", image(name)).CombinedOutput()
		if err != nil {
			t.Fatalf("inspect %s: %v\n%s", name, err, out)
		}
		t.Logf("%s: %s", name, out)
		for _, want := range []string{`"org.opencontainers.image.version":"` + version + `"`, `"org.opencontainers.image.licenses":"Apache-2.0"`, `"org.opencontainers.image.source":`, " 65532:65532"} {
			if !strings.Contains(string(out), want) {
				t.Errorf("%s: labels/user %s lack %s", name, out, want)
			}
		}
		if name == "gangboost" {
			// What launch-xgboostjob and a user can read of the trainer's libxgboost without running it.
			for _, want := range []string{`"dev.gangboost.libxgboost.version":"3.0.0-1"`, `"dev.gangboost.libxgboost.build-info":"{`, `\"USE_CUDA\":false`} {
				if !strings.Contains(string(out), want) {
					t.Errorf("%s: labels %s lack %s", name, out, want)
				}
			}
		}
	}
}

var idField = regexp.MustCompile(`"id":"[^"]*"`)

// The runtime image, run as a Kubernetes pod would run it (nonroot, read-only root, no
// capabilities, the model mounted read-only at /mnt/models), serves the iris model and answers
// as the binary does.
func TestRuntimeImageServes(t *testing.T) {
	requireImages(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	models := filepath.Join(root, "runtime", "testdata", "models", "iris")
	body := []byte(`{"inputs":[{"name":"x","shape":[2,4],"datatype":"FP32","data":[5.1,3.5,1.4,0.2,6.7,3.0,5.2,2.3]}],"outputs":[{"name":"output-0"},{"name":"contribs"}]}`)

	answer := func(url string) (int, []byte) {
		deadline := time.Now().Add(60 * time.Second)
		for {
			resp, err := http.Get(url + "/v2/health/ready")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not ready after 60s (last: %v)", url, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		resp, err := http.Post(url+"/v2/models/iris/infer", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, idField.ReplaceAll(b, nil)
	}

	hp, gp := evaltest.FreePort(t), evaltest.FreePort(t)
	name := "gangboost-runtime-test-" + strconv.Itoa(hp)
	probe := buildWriteProbe(t)
	ctr := podman(ctx, "run", "--rm", "--name", name, "--network", "host", "--read-only", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges", "-v", models+":/mnt/models:ro", "-v", filepath.Dir(probe)+":/probe:ro",
		image("gangboost-runtime"), "--model_name", "iris", "--http_port", strconv.Itoa(hp), "--grpc_port", strconv.Itoa(gp))
	var logs bytes.Buffer
	ctr.Stdout, ctr.Stderr = &logs, &logs
	if err := ctr.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = podman(context.Background(), "stop", "-t", "2", name).Run()
		_ = ctr.Wait()
		if t.Failed() {
			t.Logf("container log:\n%s", logs.String())
		}
	}()
	code, got := answer("http://127.0.0.1:" + strconv.Itoa(hp))

	bp := evaltest.FreePort(t)
	host := exec.CommandContext(ctx, filepath.Join(binDir, "gangboost-runtime"), "--model_name", "iris", "--model_dir", models,
		"--http_port", strconv.Itoa(bp), "--grpc_port", "0")
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = host.Process.Kill(); _ = host.Wait() }()
	_, want := answer("http://127.0.0.1:" + strconv.Itoa(bp))
	if code != 200 || !bytes.Equal(got, want) {
		t.Fatalf("container answered %d %s\nthe binary %s", code, got, want)
	}
	out, err := podman(ctx, "inspect", "--format", "{{.Config.User}} {{.HostConfig.ReadonlyRootfs}}", name).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "65532:65532 true" {
		t.Fatalf("container user and read-only root: %q, %v; want 65532:65532 true", out, err)
	}

	// What the running container does, not what its configuration says: the server runs as
	// 65532 (its /proc status, seen from the host), and a process in the container cannot write
	// onto its root filesystem (read-only) or the model mount, while it can write /tmp (podman's
	// tmpfs under --read-only): the probe's writes reach the container's filesystems.
	out, err = podman(ctx, "inspect", "--format", "{{.State.Pid}}", name).Output()
	if err != nil {
		t.Fatalf("container pid: %v", err)
	}
	status, err := os.ReadFile("/proc/" + strings.TrimSpace(string(out)) + "/status")
	if err != nil {
		t.Fatalf("the server's status: %v", err)
	}
	for _, field := range []string{"Uid:", "Gid:"} {
		if ids := statusField(string(status), field); len(ids) != 4 || strings.Join(ids, " ") != "65532 65532 65532 65532" {
			t.Errorf("the running server's %s %v; want 65532 (real, effective, saved, filesystem)", field, ids)
		}
	}
	out, err = podman(ctx, "exec", name, "/probe/writeprobe", "/", "/home/nonroot", "/mnt/models", "/tmp").Output()
	if err != nil {
		t.Fatalf("write probe in the container: %v\n%s", err, out)
	}
	var probed struct {
		UID, GID int
		Writes   map[string]string
	}
	if err := json.Unmarshal(out, &probed); err != nil {
		t.Fatalf("write probe: %v: %s", err, out)
	}
	t.Logf("in the container: %s", out)
	if probed.UID != 65532 || probed.GID != 65532 {
		t.Errorf("a process in the container runs as %d:%d; want 65532:65532", probed.UID, probed.GID)
	}
	for _, dir := range []string{"/", "/home/nonroot", "/mnt/models"} {
		if w := probed.Writes[dir]; !strings.Contains(w, "read-only file system") {
			t.Errorf("writing in %s in the container: %q; want a read-only file system error", dir, w)
		}
	}
	if w := probed.Writes["/tmp"]; w != "ok" {
		t.Errorf("writing in /tmp in the container: %q; want ok (the probe must be able to write somewhere)", w)
	}
}

// statusField is the values of a /proc/<pid>/status line such as "Uid:".
func statusField(status, field string) []string {
	for _, line := range strings.Split(status, "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			return strings.Fields(rest)
		}
	}
	return nil
}

// buildWriteProbe builds testdata/writeprobe, static, into a folder of its own to mount in a
// container; it returns the binary's path.
func buildWriteProbe(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	// The container's user reads the mounted folder.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(testbin.Built(t, "./test/images/testdata/writeprobe", "CGO_ENABLED=0"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "writeprobe")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// The trainer image trains as an XGBoostJob's pods do: three containers on the host network
// with the env the Training Operator injects, the model folder on a mounted volume.
func TestTrainerImageTrainsAsAGang(t *testing.T) {
	requireImages(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pvc := t.TempDir()
	// The containers run as nonroot (65532), as the image says; the volume must take its writes.
	if err := os.Chmod(pvc, 0o777); err != nil {
		t.Fatal(err)
	}
	port := evaltest.FreePort(t)
	const world = 3
	var wg sync.WaitGroup
	outs := make([][]byte, world)
	errs := make([]error, world)
	for rank := 0; rank < world; rank++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[rank], errs[rank] = podman(ctx, "run", "--rm", "--network", "host", "--read-only", "--cap-drop", "ALL",
				"-v", pvc+":/mnt/pvc",
				"-e", "MASTER_ADDR=127.0.0.1", "-e", "MASTER_PORT="+strconv.Itoa(port),
				"-e", "WORLD_SIZE="+strconv.Itoa(world), "-e", "RANK="+strconv.Itoa(rank),
				image("gangboost"), "gangboost-train", "--dataset", "iris", "--label", "species",
				"--objective", "multi:softprob", "--num-round", "10", "--nthread", "1",
				"--model-dir", "/mnt/pvc/models/iris/v1").CombinedOutput()
		}()
	}
	wg.Wait()
	for rank := range world {
		if errs[rank] != nil {
			t.Fatalf("rank %d: %v\n%s", rank, errs[rank], outs[rank])
		}
	}
	dir := filepath.Join(pvc, "models", "iris", "v1")
	md, err := modeldir.ReadMetadata(dir)
	if err != nil {
		t.Fatalf("metadata: %v\nrank 0:\n%s", err, outs[0])
	}
	model, err := os.ReadFile(filepath.Join(dir, md.ModelFile))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(model)
	if hex.EncodeToString(sum[:]) != md.ModelSHA256 || md.WorldSize != world {
		t.Fatalf("model sha256 %x, metadata says %s; world size %d", sum, md.ModelSHA256, md.WorldSize)
	}
	t.Logf("3 ranks trained %s (%d bytes, sha256 %s)", md.ModelFile, len(model), md.ModelSHA256[:12])
}

// Every binary in the gangboost image answers --help, and every component.yaml's command is
// one of them.
func TestImageBinariesAndComponentCommands(t *testing.T) {
	requireImages(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	commands := map[string]bool{"gangboost-train": true}
	specs, _ := filepath.Glob(filepath.Join(root, "components", "*", "component.yaml"))
	for _, spec := range specs {
		cmd, img := componentCommand(t, spec)
		if img != image("gangboost") {
			t.Errorf("%s: image %s, want %s", spec, img, image("gangboost"))
		}
		commands[filepath.Base(cmd)] = true
	}
	for c := range commands {
		out, err := podman(ctx, "run", "--rm", "--network", "none", "--read-only", image("gangboost"), c, "--help").CombinedOutput()
		if err != nil {
			t.Errorf("%s --help in the image: %v\n%s", c, err, out)
		}
	}
}

// componentCommand reads the first command word and the image of a component spec, compiled
// as KFP's IR (deploymentSpec.executors.<exec>.container).
func componentCommand(t *testing.T, path string) (command, image string) {
	t.Helper()
	var spec struct {
		DeploymentSpec struct {
			Executors map[string]struct {
				Container struct {
					Image   string   `json:"image"`
					Command []string `json:"command"`
				} `json:"container"`
			} `json:"executors"`
		} `json:"deploymentSpec"`
	}
	if err := yamlToJSON(path, &spec); err != nil {
		t.Fatal(err)
	}
	if len(spec.DeploymentSpec.Executors) != 1 {
		t.Fatalf("%s: %d executors, want 1", path, len(spec.DeploymentSpec.Executors))
	}
	for _, e := range spec.DeploymentSpec.Executors {
		if len(e.Container.Command) == 0 {
			t.Fatalf("%s: executor has no container command", path)
		}
		command, image = e.Container.Command[0], e.Container.Image
	}
	return command, image
}

// The SBOM file list names the Debian packages and Go modules the image was made from.
func TestImageFileList(t *testing.T) {
	requireImages(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := podman(ctx, "image", "mount", image("gangboost")).Output()
	if err != nil {
		t.Fatalf("podman image mount: %v", err)
	}
	defer podman(context.Background(), "image", "unmount", image("gangboost")).Run()
	sbom, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "usr", "share", "gangboost", "sbom.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"libxgboost0 3.0.0-1", "libdmlc0t64 ", "libc6 ", "# gangboost-train", "github.com/gangboost/gangboost"} {
		if !strings.Contains(string(sbom), want) {
			t.Errorf("sbom.txt lacks %q:\n%s", want, sbom)
		}
	}
}

// yamlToJSON reads a YAML file into v through its JSON form.
func yamlToJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	js, err := yaml.YAMLToJSON(b)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return json.Unmarshal(js, v)
}
