package realnode

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/gangboost/gangboost/internal/plumbing/repodir"
	"github.com/gangboost/gangboost/test/cluster"
)

// TestRuntimeImageServesOnRealNode runs the gangboost-runtime image, as make images builds it, in
// a pod on the real node with the container the ClusterServingRuntime manifest declares (uid
// 65532, no capabilities, read-only root, seccomp RuntimeDefault, readiness and liveness probes,
// limits), the model mounted from a claim (a PVC bound to a hostPath PV) through subPath; it
// answers V2 infer with XGBoost 3.4.1's own predictions for the model.
func TestRuntimeImageServesOnRealNode(t *testing.T) {
	c := cluster.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	root, err := repodir.Root()
	if err != nil {
		t.Fatal(err)
	}
	importImage(t, c, "gangboost-runtime")

	// The claim: a folder on the host holding models/<name>/model.json, as deploy mounts it.
	zoo := filepath.Join(root, "runtime", "forest", "testdata", "zoo", "xgb-3.4.1", "binary_logistic")
	claimDir := filepath.Join(c.Dir, "claims", "gangboost-models")
	modelDir := filepath.Join(claimDir, "models", "binary")
	if err := os.MkdirAll(modelDir, 0o755); err != nil {
		t.Fatal(err)
	}
	model, err := os.ReadFile(filepath.Join(zoo, "json", "model.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(modelDir, "model.json"), model, 0o644); err != nil {
		t.Fatal(err)
	}
	ns := namespace(t, c, "realnode-serving")
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "realnode-serving-models"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              "",
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: claimDir, Type: ptr.To(corev1.HostPathDirectory)}},
		},
	}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "gangboost-models", Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
			StorageClassName: ptr.To(""),
			VolumeName:       pv.Name,
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := c.Kube.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	ctr := runtimeContainer(t, root, "binary")
	if ctr.Image != "ghcr.io/gangboost/gangboost-runtime:"+imageVersion {
		t.Fatalf("the ClusterServingRuntime names image %s; the archive holds ghcr.io/gangboost/gangboost-runtime:%s", ctr.Image, imageVersion)
	}
	ctr.ImagePullPolicy = corev1.PullNever
	ctr.VolumeMounts = []corev1.VolumeMount{{Name: "models", MountPath: "/mnt/models", SubPath: "models/binary", ReadOnly: true}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "runtime", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeSelector:    map[string]string{cluster.RealNodeLabel: "true"},
			SecurityContext: &corev1.PodSecurityContext{FSGroup: ptr.To(int64(65532)), RunAsNonRoot: ptr.To(true)},
			Containers:      []corev1.Container{ctr},
			Volumes: []corev1.Volume{{Name: "models", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}}},
		},
	}
	t0 := time.Now()
	if _, err := c.Kube.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := waitPod(t, ctx, c.Kube, ns, pod.Name, func(p *corev1.Pod) bool {
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	})
	t.Logf("runtime pod Ready %s after create, on %s at %s", time.Since(t0).Round(time.Millisecond), p.Spec.NodeName, p.Status.PodIP)

	// What runs is the image's binary as the manifest's security context says: read from the
	// container's process on the host.
	checkContainerProcess(t, "gangboost-runti", pod.Name)

	x, cols := readNpy(t, filepath.Join(zoo, "X.npy"))
	want, _ := readNpy(t, filepath.Join(zoo, "pred.npy"))
	var rows []float32
	var wantRows []float32
	for r := 0; r < len(want) && len(wantRows) < 8; r++ {
		row := x[r*cols : (r+1)*cols]
		if hasNaN(row) {
			continue // V2 JSON has no NaN
		}
		rows = append(rows, row...)
		wantRows = append(wantRows, want[r])
	}
	body, _ := json.Marshal(map[string]any{"inputs": []map[string]any{{
		"name": "input-0", "shape": []int{len(wantRows), cols}, "datatype": "FP32", "data": rows}}})
	url := fmt.Sprintf("http://%s:8080/v2/models/binary/infer", p.Status.PodIP)
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("V2 infer at the pod IP: %v", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("V2 infer: %s: %s", resp.Status, raw)
	}
	var out struct {
		Outputs []struct {
			Data []float64 `json:"data"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Outputs) != 1 || len(out.Outputs[0].Data) != len(wantRows) {
		t.Fatalf("V2 infer answered %s (%v), want %d predictions", raw, err, len(wantRows))
	}
	for i, got := range out.Outputs[0].Data {
		if math.Abs(got-float64(wantRows[i])) > 1e-6 {
			t.Errorf("row %d: %v, XGBoost 3.4.1 predicts %v", i, got, wantRows[i])
		}
	}
	logs, err := c.Kube.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil || len(logs) == 0 {
		t.Errorf("pods/log of the runtime: %v (%d bytes)", err, len(logs))
	}
}

// runtimeContainer is the gangboost-xgboost ClusterServingRuntime's container from the
// manifests, with KServe's {{.Name}} filled in.
func runtimeContainer(t *testing.T, root, name string) corev1.Container {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "manifests", "clusterservingruntime.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		// Only the name and the containers are read: KServe's typed API builds only on its own
		// pinned libraries (test/kservetypes holds the manifests to it).
		var rt struct {
			Metadata struct{ Name string } `json:"metadata"`
			Spec     struct {
				Containers []corev1.Container `json:"containers"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(doc), &rt); err != nil {
			t.Fatal(err)
		}
		if rt.Metadata.Name != "gangboost-xgboost" {
			continue
		}
		ctr := rt.Spec.Containers[0]
		for i, a := range ctr.Args {
			ctr.Args[i] = strings.ReplaceAll(a, "{{.Name}}", name)
		}
		return ctr
	}
	t.Fatal("manifests/clusterservingruntime.yaml has no gangboost-xgboost runtime")
	return corev1.Container{}
}

// checkContainerProcess finds the container's process on the host by its name and its pod's
// (HOSTNAME in its environment, which the runtime sets to the pod's hostname) and checks the
// kernel's view of it: uid 65532, no capabilities, no new privileges, a seccomp filter, and a
// read-only root.
func checkContainerProcess(t *testing.T, comm, pod string) {
	t.Helper()
	procs, _ := os.ReadDir("/proc")
	for _, e := range procs {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		c, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil || strings.TrimSpace(string(c)) != comm {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if !slices.Contains(strings.Split(string(env), "\x00"), "HOSTNAME="+pod) {
			continue
		}
		status, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		fields := map[string]string{}
		for _, line := range strings.Split(string(status), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok {
				fields[k] = strings.Join(strings.Fields(v), " ")
			}
		}
		for k, want := range map[string]string{"Uid": "65532 65532 65532 65532", "CapEff": "0000000000000000",
			"CapBnd": "0000000000000000", "NoNewPrivs": "1", "Seccomp": "2"} {
			if fields[k] != want {
				t.Errorf("container process %s: %s is %q, want %q", e.Name(), k, fields[k], want)
			}
		}
		mi, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "mountinfo"))
		for _, line := range strings.Split(string(mi), "\n") {
			if f := strings.Fields(line); len(f) > 5 && f[4] == "/" && !strings.HasPrefix(f[5], "ro") {
				t.Errorf("container process %s: root mounted %s, want read-only", e.Name(), f[5])
			}
		}
		return
	}
	t.Errorf("no process named %s of pod %s on the host", comm, pod)
}

// readNpy reads a little-endian float32 .npy array; it returns the values and the row length.
func readNpy(t *testing.T, path string) ([]float32, int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 10 || string(b[1:6]) != "NUMPY" {
		t.Fatalf("%s: not a .npy file", path)
	}
	hlen, off := int(binary.LittleEndian.Uint16(b[8:10])), 10
	if b[6] >= 2 {
		hlen, off = int(binary.LittleEndian.Uint32(b[8:12])), 12
	}
	header := string(b[off : off+hlen])
	if !strings.Contains(header, "'<f4'") {
		t.Fatalf("%s: dtype is not <f4: %s", path, header)
	}
	cols := 1
	if i := strings.Index(header, "'shape': ("); i >= 0 {
		dims := strings.Split(strings.TrimSuffix(strings.SplitN(header[i+10:], ")", 2)[0], ","), ",")
		if len(dims) == 2 {
			cols, _ = strconv.Atoi(strings.TrimSpace(dims[1]))
		}
	}
	data := b[off+hlen:]
	out := make([]float32, len(data)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return out, cols
}

func hasNaN(row []float32) bool {
	for _, v := range row {
		if v != v {
			return true
		}
	}
	return false
}
