package podrunner

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	authenticationv1 "k8s.io/api/authentication/v1"
)

// loopback is the address every pod, Service and node resolves to: all pods
// share the host's network, as hostNetwork pods do.
const loopback = "127.0.0.1"

// launch is a container made ready to run as a local process.
type launch struct {
	name string
	argv []string
	env  []string
	dir  string
	// fallbackToLogs is terminationMessagePolicy FallbackToLogsOnError: a failed run's log
	// tail becomes its termination message. (The File policy's file cannot be mounted into a
	// host process, so its message stays empty here.)
	fallbackToLogs bool
	// mounts are the container's volumes, bound at their mount paths in its own mount
	// namespace when Options.MountVolumes is set.
	mounts []mount
}

// preparer turns a pod's containers into local command lines.
type preparer struct {
	kube kubernetes.Interface
	opts *Options
	pod  *corev1.Pod
	// podDir holds emptyDir volumes, materialized ConfigMaps/Secrets and the
	// working directory of containers without one.
	podDir string
	// mounts maps a container mount path to a local folder, per container.
	mounts map[string][]mount
	// hosts are the names that resolve to the pod network in the pod's
	// namespace: Services and pods (hostname and subdomain).
	hosts map[string]bool
}

type mount struct {
	path     string // in the container
	local    string // on this machine
	readOnly bool
}

// prepare resolves volumes and the names of the pod's namespace; it is done
// once per pod.
func (p *preparer) prepare(ctx context.Context) error {
	if err := os.MkdirAll(p.podDir, 0o755); err != nil {
		return err
	}
	vols := map[string]string{}
	for _, v := range p.pod.Spec.Volumes {
		local, err := p.volume(ctx, v)
		if err != nil {
			return fmt.Errorf("volume %s: %w", v.Name, err)
		}
		vols[v.Name] = local
	}
	p.mounts = map[string][]mount{}
	all := append(append([]corev1.Container{}, p.pod.Spec.InitContainers...), p.pod.Spec.Containers...)
	for _, c := range all {
		var ms []mount
		for _, vm := range c.VolumeMounts {
			local, ok := vols[vm.Name]
			if !ok {
				return fmt.Errorf("container %s: volumeMount %s: no volume of that name", c.Name, vm.Name)
			}
			if vm.SubPath != "" {
				local = filepath.Join(local, vm.SubPath)
				if err := os.MkdirAll(local, 0o755); err != nil {
					return err
				}
			}
			ms = append(ms, mount{path: filepath.Clean(vm.MountPath), local: local, readOnly: vm.ReadOnly})
		}
		// Longest mount path first, so /mnt/pvc/models wins over /mnt/pvc.
		sort.Slice(ms, func(i, j int) bool { return len(ms[i].path) > len(ms[j].path) })
		p.mounts[c.Name] = ms
	}
	p.hosts = map[string]bool{}
	svcs, err := p.kube.CoreV1().Services(p.pod.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list services: %w", err)
	}
	for _, s := range svcs.Items {
		p.hosts[s.Name] = true
	}
	pods, err := p.kube.CoreV1().Pods(p.pod.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	for _, o := range pods.Items {
		p.hosts[o.Name] = true
		if o.Spec.Hostname != "" {
			p.hosts[o.Spec.Hostname] = true
		}
	}
	return nil
}

// volume gives the local folder of a pod volume.
func (p *preparer) volume(ctx context.Context, v corev1.Volume) (string, error) {
	switch {
	case v.PersistentVolumeClaim != nil:
		return p.claimDir(ctx, v.PersistentVolumeClaim.ClaimName)
	case v.HostPath != nil:
		return v.HostPath.Path, nil
	case v.ConfigMap != nil:
		// A configMap, secret or downwardAPI volume is a projected volume of one source.
		dir := filepath.Join(p.podDir, "volumes", v.Name)
		return dir, p.projected(ctx, dir, []corev1.VolumeProjection{{ConfigMap: &corev1.ConfigMapProjection{
			LocalObjectReference: v.ConfigMap.LocalObjectReference, Items: v.ConfigMap.Items, Optional: v.ConfigMap.Optional}}})
	case v.Secret != nil:
		dir := filepath.Join(p.podDir, "volumes", v.Name)
		return dir, p.projected(ctx, dir, []corev1.VolumeProjection{{Secret: &corev1.SecretProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: v.Secret.SecretName}, Items: v.Secret.Items, Optional: v.Secret.Optional}}})
	case v.Projected != nil:
		dir := filepath.Join(p.podDir, "volumes", v.Name)
		return dir, p.projected(ctx, dir, v.Projected.Sources)
	case v.DownwardAPI != nil:
		dir := filepath.Join(p.podDir, "volumes", v.Name)
		return dir, p.projected(ctx, dir, []corev1.VolumeProjection{{DownwardAPI: &corev1.DownwardAPIProjection{Items: v.DownwardAPI.Items}}})
	default:
		// emptyDir, and sources a process cannot use anyway: an empty folder.
		dir := filepath.Join(p.podDir, "volumes", v.Name)
		return dir, os.MkdirAll(dir, 0o755)
	}
}

// projected writes a projected volume's files as the kubelet does: a service-account token from
// the TokenRequest API bound to the pod (what kube-api-access-* holds, so a program in the pod
// authenticates as its service account with only what RBAC grants it), ConfigMap and Secret
// keys, and Downward API fields. The token is not refreshed: it lives as long as the API server
// lets it (an hour or more), longer than a test's pod.
func (p *preparer) projected(ctx context.Context, dir string, sources []corev1.VolumeProjection) error {
	files := map[string][]byte{}
	for _, src := range sources {
		switch {
		case src.ServiceAccountToken != nil:
			sat := src.ServiceAccountToken
			req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
				ExpirationSeconds: sat.ExpirationSeconds,
				BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: p.pod.Name, UID: p.pod.UID},
			}}
			if sat.Audience != "" {
				req.Spec.Audiences = []string{sat.Audience}
			}
			sa := p.pod.Spec.ServiceAccountName
			if sa == "" {
				sa = "default"
			}
			tok, err := p.kube.CoreV1().ServiceAccounts(p.pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
			if err != nil {
				return fmt.Errorf("service account %s token: %w", sa, err)
			}
			files[sat.Path] = []byte(tok.Status.Token)
		case src.ConfigMap != nil:
			cm, err := p.kube.CoreV1().ConfigMaps(p.pod.Namespace).Get(ctx, src.ConfigMap.Name, metav1.GetOptions{})
			if err != nil {
				if src.ConfigMap.Optional != nil && *src.ConfigMap.Optional {
					continue
				}
				return err
			}
			data := map[string][]byte{}
			for k, v := range cm.Data {
				data[k] = []byte(v)
			}
			for k, v := range cm.BinaryData {
				data[k] = v
			}
			if err := pick(files, data, src.ConfigMap.Items); err != nil {
				return fmt.Errorf("configMap %s: %w", src.ConfigMap.Name, err)
			}
		case src.Secret != nil:
			s, err := p.kube.CoreV1().Secrets(p.pod.Namespace).Get(ctx, src.Secret.Name, metav1.GetOptions{})
			if err != nil {
				if src.Secret.Optional != nil && *src.Secret.Optional {
					continue
				}
				return err
			}
			if err := pick(files, s.Data, src.Secret.Items); err != nil {
				return fmt.Errorf("secret %s: %w", src.Secret.Name, err)
			}
		case src.DownwardAPI != nil:
			for _, it := range src.DownwardAPI.Items {
				if it.FieldRef == nil {
					return fmt.Errorf("downwardAPI %s: only fieldRef items are supported", it.Path)
				}
				v, err := fieldRef(p.pod, it.FieldRef.FieldPath)
				if err != nil {
					return err
				}
				files[it.Path] = []byte(v)
			}
		}
	}
	return writeFiles(dir, files)
}

// pick adds data's keys to files, or only items (key -> path) when given.
func pick(files, data map[string][]byte, items []corev1.KeyToPath) error {
	if len(items) == 0 {
		for k, v := range data {
			files[k] = v
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			return fmt.Errorf("key %s not found", it.Key)
		}
		files[it.Path] = v
	}
	return nil
}

// claimDir is the folder behind a PersistentVolumeClaim: the hostPath or
// local path of its bound PersistentVolume, else Options.PVCDir.
func (p *preparer) claimDir(ctx context.Context, claim string) (string, error) {
	pvc, err := p.kube.CoreV1().PersistentVolumeClaims(p.pod.Namespace).Get(ctx, claim, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return "", err
	}
	if err == nil && pvc.Spec.VolumeName != "" {
		pv, err := p.kube.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		if err != nil {
			return "", fmt.Errorf("claim %s: volume %s: %w", claim, pvc.Spec.VolumeName, err)
		}
		switch {
		case pv.Spec.HostPath != nil:
			return pv.Spec.HostPath.Path, os.MkdirAll(pv.Spec.HostPath.Path, 0o755)
		case pv.Spec.Local != nil:
			return pv.Spec.Local.Path, os.MkdirAll(pv.Spec.Local.Path, 0o755)
		}
	}
	dir := p.opts.PVCDir(p.pod.Namespace, claim)
	return dir, os.MkdirAll(dir, 0o755)
}

// writeFiles writes each file (path relative to dir -> content) under dir.
func writeFiles(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for rel, b := range files {
		target := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(target, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// container builds the command line and environment of one container.
func (p *preparer) container(ctx context.Context, c corev1.Container) (*launch, error) {
	envMap, envList, err := p.env(ctx, c)
	if err != nil {
		return nil, err
	}
	argv := append(append([]string{}, c.Command...), c.Args...)
	if len(c.Command) == 0 {
		entry, ok := p.opts.Images[c.Image]
		if !ok {
			return nil, fmt.Errorf("container %s: no command and image %q has no entrypoint in Options.Images", c.Name, c.Image)
		}
		argv = append(append([]string{}, entry...), c.Args...)
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("container %s: empty command", c.Name)
	}
	for i := range argv {
		argv[i] = p.rewritePath(c.Name, expand(argv[i], envMap))
	}
	bin, err := p.resolveCommand(argv[0])
	if err != nil {
		return nil, fmt.Errorf("container %s: %w", c.Name, err)
	}
	argv[0] = bin
	dir := filepath.Join(p.podDir, "work", c.Name)
	if c.WorkingDir != "" {
		if w := p.rewritePath(c.Name, c.WorkingDir); w != c.WorkingDir {
			dir = w
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &launch{name: c.Name, argv: argv, env: envList, dir: dir, mounts: p.mounts[c.Name],
		fallbackToLogs: c.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError}, nil
}

// resolveCommand maps a container command to a local executable: first
// Options.Commands (by the full command and by its base name, so both
// gangboost-train and /usr/local/bin/gangboost-train map), then, if
// allowed, the host's PATH.
func (p *preparer) resolveCommand(cmd string) (string, error) {
	if local, ok := p.opts.Commands[cmd]; ok {
		return local, nil
	}
	if local, ok := p.opts.Commands[filepath.Base(cmd)]; ok {
		return local, nil
	}
	if !p.opts.AllowHostCommands {
		return "", fmt.Errorf("command %q is not in Options.Commands and host commands are not allowed", cmd)
	}
	path, err := exec.LookPath(cmd)
	if err != nil {
		return "", fmt.Errorf("command %q: not in Options.Commands nor on PATH: %w", cmd, err)
	}
	return path, nil
}

// env computes a container's environment the way the kubelet does (values,
// Downward API, ConfigMap/Secret references, $(VAR) expansion in order),
// then maps names of the pod network to 127.0.0.1 and mount paths to local
// folders.
func (p *preparer) env(ctx context.Context, c corev1.Container) (map[string]string, []string, error) {
	vals := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		vals[k] = v
	}
	for _, from := range c.EnvFrom {
		data := map[string]string{}
		switch {
		case from.ConfigMapRef != nil:
			cm, err := p.kube.CoreV1().ConfigMaps(p.pod.Namespace).Get(ctx, from.ConfigMapRef.Name, metav1.GetOptions{})
			if err != nil {
				if from.ConfigMapRef.Optional != nil && *from.ConfigMapRef.Optional {
					continue
				}
				return nil, nil, fmt.Errorf("envFrom configMap %s: %w", from.ConfigMapRef.Name, err)
			}
			data = cm.Data
		case from.SecretRef != nil:
			s, err := p.kube.CoreV1().Secrets(p.pod.Namespace).Get(ctx, from.SecretRef.Name, metav1.GetOptions{})
			if err != nil {
				if from.SecretRef.Optional != nil && *from.SecretRef.Optional {
					continue
				}
				return nil, nil, fmt.Errorf("envFrom secret %s: %w", from.SecretRef.Name, err)
			}
			for k, b := range s.Data {
				data[k] = string(b)
			}
		}
		for k, v := range data {
			set(from.Prefix+k, v)
		}
	}
	// Only literal values are addresses to map (MASTER_ADDR=job-master-0);
	// Downward API and ConfigMap/Secret values keep what they say (a pod
	// name is not a host to dial).
	literal := map[string]bool{}
	for _, e := range c.Env {
		v := expand(e.Value, vals)
		literal[e.Name] = e.ValueFrom == nil
		if e.ValueFrom != nil {
			var err error
			if v, err = p.valueFrom(ctx, c, e); err != nil {
				return nil, nil, fmt.Errorf("container %s env %s: %w", c.Name, e.Name, err)
			}
		}
		set(e.Name, v)
	}
	for _, k := range order {
		if literal[k] {
			vals[k] = p.rewriteHosts(vals[k])
		}
		vals[k] = p.rewritePath(c.Name, vals[k])
	}
	// What a container gets from its runtime: the pod name as hostname and
	// a PATH; the test process's own environment is not passed on.
	base := map[string]string{
		"HOSTNAME": p.pod.Name,
		"HOME":     filepath.Join(p.podDir, "home"),
		"TMPDIR":   filepath.Join(p.podDir, "tmp"),
		"PATH":     os.Getenv("PATH"),
	}
	// The API server's Service, as the kubelet names it to every container (rest.InClusterConfig
	// reads these): here the API server's own address, there being no kube-proxy.
	if host, port, err := net.SplitHostPort(p.opts.APIServer); err == nil {
		base["KUBERNETES_SERVICE_HOST"] = host
		base["KUBERNETES_SERVICE_PORT"] = port
		base["KUBERNETES_SERVICE_PORT_HTTPS"] = port
	}
	if p.opts.HTTPProxy != "" {
		base["HTTP_PROXY"] = p.opts.HTTPProxy
		// gRPC clients take their proxy from HTTPS_PROXY and ask it for a CONNECT tunnel.
		base["HTTPS_PROXY"] = p.opts.HTTPProxy
		base["NO_PROXY"] = "127.0.0.1,localhost"
	}
	for _, k := range p.opts.PassEnv {
		if v, ok := os.LookupEnv(k); ok {
			base[k] = v
		}
	}
	for _, d := range []string{base["HOME"], base["TMPDIR"]} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, nil, err
		}
	}
	var list []string
	for k, v := range base {
		if _, ok := vals[k]; !ok {
			list = append(list, k+"="+v)
		}
	}
	for _, k := range order {
		list = append(list, k+"="+vals[k])
	}
	all := map[string]string{}
	for k, v := range base {
		all[k] = v
	}
	for k, v := range vals {
		all[k] = v
	}
	return all, list, nil
}

func (p *preparer) valueFrom(ctx context.Context, c corev1.Container, e corev1.EnvVar) (string, error) {
	vf := e.ValueFrom
	switch {
	case vf.FieldRef != nil:
		return fieldRef(p.pod, vf.FieldRef.FieldPath)
	case vf.ResourceFieldRef != nil:
		return resourceFieldRef(c, vf.ResourceFieldRef)
	case vf.ConfigMapKeyRef != nil:
		ref := vf.ConfigMapKeyRef
		cm, err := p.kube.CoreV1().ConfigMaps(p.pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err == nil {
			if v, ok := cm.Data[ref.Key]; ok {
				return v, nil
			}
			err = fmt.Errorf("configMap %s has no key %s", ref.Name, ref.Key)
		}
		if ref.Optional != nil && *ref.Optional {
			return "", nil
		}
		return "", err
	case vf.SecretKeyRef != nil:
		ref := vf.SecretKeyRef
		s, err := p.kube.CoreV1().Secrets(p.pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err == nil {
			if v, ok := s.Data[ref.Key]; ok {
				return string(v), nil
			}
			err = fmt.Errorf("secret %s has no key %s", ref.Name, ref.Key)
		}
		if ref.Optional != nil && *ref.Optional {
			return "", nil
		}
		return "", err
	}
	return "", fmt.Errorf("valueFrom: no supported source")
}

// fieldRef answers the Downward API fields a pod can ask for.
func fieldRef(pod *corev1.Pod, path string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.hostIP", "status.podIPs", "status.hostIPs":
		return loopback, nil
	}
	for prefix, m := range map[string]map[string]string{"metadata.labels": pod.Labels, "metadata.annotations": pod.Annotations} {
		if strings.HasPrefix(path, prefix+"['") && strings.HasSuffix(path, "']") {
			return m[strings.TrimSuffix(strings.TrimPrefix(path, prefix+"['"), "']")], nil
		}
	}
	return "", fmt.Errorf("fieldRef %q not supported", path)
}

func resourceFieldRef(c corev1.Container, ref *corev1.ResourceFieldSelector) (string, error) {
	parts := strings.SplitN(ref.Resource, ".", 2)
	if len(parts) != 2 {
		return "", fmt.Errorf("resourceFieldRef %q", ref.Resource)
	}
	list := c.Resources.Limits
	if parts[0] == "requests" {
		list = c.Resources.Requests
	}
	q, ok := list[corev1.ResourceName(parts[1])]
	if !ok {
		return "0", nil
	}
	div := ref.Divisor
	if div.IsZero() {
		if parts[1] == "cpu" {
			// The kubelet rounds CPU up to whole cores by default.
			return strconv.FormatInt((q.MilliValue()+999)/1000, 10), nil
		}
		return strconv.FormatInt(q.Value(), 10), nil
	}
	return strconv.FormatInt((q.MilliValue()+div.MilliValue()-1)/div.MilliValue(), 10), nil
}

// expand replaces $(VAR) with earlier variables, as the kubelet does; $$
// escapes a dollar, unknown references stay as written.
func expand(s string, vals map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := vals[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// rewriteHosts maps host names of the pod network in an env value to
// 127.0.0.1. A value may be a list ("a:1,b:2"), a host:port or a URL; a host
// matches when its first label is a Service or pod of the pod's namespace
// and the rest is a cluster-DNS suffix (ns, ns.svc, ns.svc.cluster.local) or
// a pod subdomain followed by one.
func (p *preparer) rewriteHosts(v string) string {
	if v == "" {
		return v
	}
	parts := strings.Split(v, ",")
	changed := false
	for i, part := range parts {
		if r := p.rewriteHostToken(part); r != part {
			parts[i], changed = r, true
		}
	}
	if !changed {
		return v
	}
	return strings.Join(parts, ",")
}

func (p *preparer) rewriteHostToken(tok string) string {
	prefix := ""
	rest := tok
	if i := strings.Index(rest, "://"); i >= 0 {
		prefix, rest = rest[:i+3], rest[i+3:]
	}
	suffix := ""
	if i := strings.IndexAny(rest, "/"); i >= 0 {
		rest, suffix = rest[:i], rest[i:]
	}
	host, port := rest, ""
	if h, pt, err := net.SplitHostPort(rest); err == nil {
		host, port = h, pt
	}
	if !p.isPodNetworkHost(host) {
		return tok
	}
	if port != "" {
		return prefix + net.JoinHostPort(loopback, port) + suffix
	}
	return prefix + loopback + suffix
}

func (p *preparer) isPodNetworkHost(host string) bool {
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	if len(labels) == 0 || !p.hosts[labels[0]] {
		return false
	}
	rest := labels[1:]
	if len(rest) == 0 {
		return true
	}
	// <pod hostname>.<subdomain>[.<ns>...]: drop the subdomain when it is a
	// Service of the namespace (a bare <hostname>.<subdomain> resolves
	// through the pod's DNS search path, as Kubeflow Trainer v2's
	// DMLC_TRACKER_URI does).
	if p.hosts[rest[0]] && (len(rest) == 1 || rest[1] == p.pod.Namespace) {
		rest = rest[1:]
	}
	want := []string{p.pod.Namespace, "svc", "cluster", "local"}
	if len(rest) > len(want) {
		return false
	}
	for i := range rest {
		if rest[i] != want[i] {
			return false
		}
	}
	return true
}

// rewritePath maps a path under one of the container's mount paths to the
// local folder behind the volume. It applies to a whole word and to the
// value after "=" (--model-dir=/mnt/pvc/...).
func (p *preparer) rewritePath(container, s string) string {
	if i := strings.IndexByte(s, '='); i >= 0 && strings.HasPrefix(s, "-") {
		return s[:i+1] + p.rewritePath(container, s[i+1:])
	}
	for _, m := range p.mounts[container] {
		if s == m.path {
			return m.local
		}
		if strings.HasPrefix(s, m.path+"/") {
			return filepath.Join(m.local, strings.TrimPrefix(s, m.path+"/"))
		}
	}
	return s
}
