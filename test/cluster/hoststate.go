package cluster

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// What a real node (kubelet, kube-proxy, containerd, the CNI bridge) can change on the host outside
// its run folder, taken before it starts so that Stop undoes exactly what the run added, and so a
// test can check that nothing is left.

// HostState is the part of the host a real node touches.
type HostState struct {
	// Chains are "<command>/<table>/<chain>" of every iptables backend and family that answers,
	// but for the built-in chains (which a listing alone creates), whose rules are listed instead
	// ("<command>/<table>/-A <chain> ...").
	Chains []string
	// NftTables are "<family> <name>" of nftables' tables (iptables-nft's among them).
	NftTables []string
	// Links are the network interfaces' names.
	Links []string
	// Mounts are the mount points of this mount namespace.
	Mounts []string
	// Sysctls are the kernel settings the kubelet, kube-proxy and the bridge plugin set, by path
	// under /proc/sys ("" when absent).
	Sysctls map[string]string
	// Entries are the names in the host folders they write to ("<folder>/<name>"), and the
	// folders themselves.
	Entries []string
	// Cgroups are the cgroup folders containerd's containers get (<hierarchy>/k8s.io and one per
	// container under it), which runc removes only when a container is deleted.
	Cgroups []string
	// Procs are "<pid> <name>" of the processes that run containers or nodes (containerd, its
	// shims, runc, kubelet, kube-proxy).
	Procs []string
}

// nodeSysctls are the settings the kubelet's kernel tunables (vm.overcommit_memory, panic*, root's
// key quotas), the bridge plugin (ip_forward) and kube-proxy (route_localnet, conntrack) may change.
var nodeSysctls = []string{
	"net/ipv4/ip_forward", "net/ipv4/conf/all/route_localnet", "net/bridge/bridge-nf-call-iptables",
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
	"net/netfilter/nf_conntrack_max", "net/netfilter/nf_conntrack_tcp_timeout_established",
	"net/netfilter/nf_conntrack_tcp_timeout_close_wait",
}

// nodeHostDirs are the host folders a node's components write to whatever their flags say (the
// kubelet's /var/log/containers links and device-plugin socket, the shims' sockets in
// /run/containerd, libcni's cache), or would by default.
var nodeHostDirs = []string{
	"/var/log/pods", "/var/log/containers", "/run/containerd", "/run/containerd/s", "/var/lib/kubelet",
	"/var/lib/kubelet/device-plugins", "/var/lib/kubelet/plugins", "/var/lib/kubelet/plugins_registry",
	"/var/lib/containerd", "/var/lib/cni", cniCacheDir, "/var/lib/cni/networks", "/etc/cni/net.d", "/opt/containerd",
	"/run/netns", "/var/run/kubernetes", "/etc/kubernetes",
}

// cniCacheDir is where libcni keeps each attachment's result until its DEL.
const cniCacheDir = "/var/lib/cni/results"

// nodeProcNames are the executables of a node.
var nodeProcNames = []string{"containerd", "containerd-shim", "containerd-shim-runc-v2", "runc", "kubelet", "kube-proxy"}

// iptablesCommands are the save commands of every backend and family.
var iptablesCommands = []string{"iptables", "ip6tables", "iptables-legacy", "ip6tables-legacy"}

// SnapshotHost reads the host state a real node can change.
func SnapshotHost() HostState {
	s := HostState{Sysctls: map[string]string{}}
	for _, cmd := range iptablesCommands {
		for table, t := range iptablesSave(cmd) {
			for _, ch := range t.chains {
				if !builtinChains[ch] {
					s.Chains = append(s.Chains, cmd+"/"+table+"/"+ch)
				}
			}
			for _, r := range t.rules {
				if builtinChains[strings.Fields(r)[1]] {
					s.Chains = append(s.Chains, cmd+"/"+table+"/"+r)
				}
			}
		}
	}
	s.NftTables = nftTables()
	if ifs, err := net.Interfaces(); err == nil {
		for _, i := range ifs {
			s.Links = append(s.Links, i.Name)
		}
	}
	s.Mounts = mountPoints()
	for _, k := range nodeSysctls {
		b, _ := os.ReadFile(filepath.Join("/proc/sys", k))
		s.Sysctls[k] = strings.TrimSpace(string(b))
	}
	for _, d := range nodeHostDirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		s.Entries = append(s.Entries, d+"/")
		for _, e := range ents {
			s.Entries = append(s.Entries, filepath.Join(d, e.Name()))
		}
	}
	s.Cgroups = containerCgroups()
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		comm, err := os.ReadFile(filepath.Join("/proc", p.Name(), "comm"))
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(comm))
		if slices.Contains(nodeProcNames, name) {
			s.Procs = append(s.Procs, p.Name()+" "+name)
		}
	}
	for _, l := range [][]string{s.Chains, s.NftTables, s.Links, s.Mounts, s.Entries, s.Cgroups, s.Procs} {
		slices.Sort(l)
	}
	return s
}

// Added lists what after has that s had not, and the settings that differ, one line each.
func (s HostState) Added(after HostState) []string {
	var out []string
	added := func(kind string, before, now []string) {
		for _, x := range now {
			if !slices.Contains(before, x) {
				out = append(out, kind+" "+x)
			}
		}
	}
	added("iptables chain", s.Chains, after.Chains)
	added("nftables table", s.NftTables, after.NftTables)
	added("network interface", s.Links, after.Links)
	added("mount", s.Mounts, after.Mounts)
	added("file", s.Entries, after.Entries)
	added("cgroup", s.Cgroups, after.Cgroups)
	added("process", s.Procs, after.Procs)
	for _, k := range nodeSysctls {
		if s.Sysctls[k] != after.Sysctls[k] {
			out = append(out, fmt.Sprintf("sysctl %s: %q, was %q", k, after.Sysctls[k], s.Sysctls[k]))
		}
	}
	return out
}

// builtinChains are the chains the kernel makes with a table.
var builtinChains = map[string]bool{"PREROUTING": true, "INPUT": true, "FORWARD": true, "OUTPUT": true, "POSTROUTING": true}

// iptablesTable is one table of iptables-save's output.
type iptablesTable struct {
	chains []string
	// rules are the "-A <chain> ..." lines as printed (quoted).
	rules []string
}

// iptablesSave reads every table by running <cmd>-save; nil when the command or its backend is
// missing.
func iptablesSave(cmd string) map[string]*iptablesTable {
	out, err := exec.Command(cmd + "-save").Output()
	if err != nil {
		return nil
	}
	tables := map[string]*iptablesTable{}
	var t *iptablesTable
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "*"):
			t = &iptablesTable{}
			tables[line[1:]] = t
		case t == nil:
		case strings.HasPrefix(line, ":"):
			if f := strings.Fields(line[1:]); len(f) > 0 {
				t.chains = append(t.chains, f[0])
			}
		case strings.HasPrefix(line, "-A "):
			t.rules = append(t.rules, line)
		}
	}
	return tables
}

// nftTables lists nftables' tables as "<family> <name>"; nil without the nft command.
func nftTables() []string {
	out, err := exec.Command("nft", "list", "tables").Output()
	if err != nil {
		return nil
	}
	var tables []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "table" {
			tables = append(tables, f[1]+" "+f[2])
		}
	}
	return tables
}

// containerCgroups lists, sorted, the k8s.io cgroup folder of every hierarchy under
// /sys/fs/cgroup (v1's controllers, or v2's single one) and the container folders in it.
func containerCgroups() []string {
	var out []string
	roots, _ := filepath.Glob("/sys/fs/cgroup/*/k8s.io")
	if v2, err := os.Stat("/sys/fs/cgroup/k8s.io"); err == nil && v2.IsDir() {
		roots = append(roots, "/sys/fs/cgroup/k8s.io")
	}
	for _, r := range roots {
		out = append(out, r)
		ents, _ := os.ReadDir(r)
		for _, e := range ents {
			if e.IsDir() {
				out = append(out, filepath.Join(r, e.Name()))
			}
		}
	}
	slices.Sort(out)
	return out
}

// mountPoints are the mount points of this process's mount namespace, unescaped.
func mountPoints() []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 {
			out = append(out, unescapeMount(f[4]))
		}
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// restoreHost undoes what a real node added to the host since before: rules and KUBE-*/CNI-*
// chains in iptables (every backend and family), nftables tables it created (iptables-nft's
// tables among them), the bridge and leftover veths, mounts under the host folders, the kernel
// settings, and the links, sockets and empty folders it left in the host folders. It returns what
// it could not undo. Mounts under the run folder are undone before (unmountUnder).
func restoreHost(before HostState, bridge string) []string {
	var failed []string
	run := func(name string, args ...string) {
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			failed = append(failed, fmt.Sprintf("%s %s: %v: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out)))
		}
	}
	newTable := map[string]bool{}
	for _, t := range nftTables() {
		if !slices.Contains(before.NftTables, t) {
			newTable[t] = true
		}
	}
	family := map[string]string{"iptables": "ip", "ip6tables": "ip6"}
	for _, cmd := range iptablesCommands {
		for table, t := range iptablesSave(cmd) {
			if f, ok := family[cmd]; ok && newTable[f+" "+table] {
				continue // the whole table goes below
			}
			isNew := map[string]bool{}
			for _, ch := range t.chains {
				if !builtinChains[ch] && !slices.Contains(before.Chains, cmd+"/"+table+"/"+ch) &&
					(strings.HasPrefix(ch, "KUBE-") || strings.HasPrefix(ch, "CNI-")) {
					isNew[ch] = true
				}
			}
			for _, r := range t.rules {
				args := splitRule(r)
				if len(args) < 2 || isNew[args[1]] {
					continue
				}
				jumps := false
				for i, a := range args[:len(args)-1] {
					if (a == "-j" || a == "-g") && isNew[args[i+1]] {
						jumps = true
					}
				}
				if jumps || (builtinChains[args[1]] && !slices.Contains(before.Chains, cmd+"/"+table+"/"+r)) {
					run(cmd, append([]string{"-w", "-t", table, "-D"}, args[1:]...)...)
				}
			}
			for ch := range isNew {
				run(cmd, "-w", "-t", table, "-F", ch)
			}
			for ch := range isNew {
				run(cmd, "-w", "-t", table, "-X", ch)
			}
		}
	}
	for t := range newTable {
		run("nft", append([]string{"delete", "table"}, strings.Fields(t)...)...)
	}
	if ifs, err := net.Interfaces(); err == nil {
		for _, i := range ifs {
			if !slices.Contains(before.Links, i.Name) && (i.Name == bridge || strings.HasPrefix(i.Name, "veth")) {
				run("ip", "link", "delete", i.Name)
			}
		}
	}
	mounts := mountPoints()
	for i := len(mounts) - 1; i >= 0; i-- {
		m := mounts[i]
		if slices.Contains(before.Mounts, m) {
			continue
		}
		for _, d := range nodeHostDirs {
			if strings.HasPrefix(m, d+"/") {
				if err := unmount(m); err != nil {
					failed = append(failed, err.Error())
				}
				break
			}
		}
	}
	for _, k := range nodeSysctls {
		was := before.Sysctls[k]
		path := filepath.Join("/proc/sys", k)
		now, err := os.ReadFile(path)
		if was == "" || err != nil || strings.TrimSpace(string(now)) == was {
			continue
		}
		if err := os.WriteFile(path, []byte(was+"\n"), 0o644); err != nil {
			failed = append(failed, fmt.Sprintf("restore sysctl %s to %s: %v", k, was, err))
		}
	}
	cgroups := containerCgroups()
	slices.Reverse(cgroups) // a container's folder before k8s.io
	for _, cg := range cgroups {
		if !slices.Contains(before.Cgroups, cg) {
			if err := syscall.Rmdir(cg); err != nil && err != syscall.ENOENT {
				failed = append(failed, fmt.Sprintf("remove cgroup %s: %v", cg, err))
			}
		}
	}
	// Deepest first, so a folder is emptied before it is removed.
	after := SnapshotHost().Entries
	depth := func(e string) int { return strings.Count(strings.TrimSuffix(e, "/"), "/") }
	slices.SortFunc(after, func(a, b string) int { return depth(b) - depth(a) })
	for _, e := range after {
		if slices.Contains(before.Entries, e) {
			continue
		}
		p := strings.TrimSuffix(e, "/")
		st, err := os.Lstat(p)
		if err != nil {
			continue
		}
		if st.Mode()&os.ModeSymlink != 0 || st.IsDir() || st.Mode()&os.ModeSocket != 0 || filepath.Dir(p) == cniCacheDir {
			if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
				failed = append(failed, fmt.Sprintf("remove %s: %v", p, err))
			}
		} else {
			failed = append(failed, fmt.Sprintf("left on the host: %s", p))
		}
	}
	return failed
}

// splitRule splits an iptables-save rule line into arguments, undoing its double quotes.
func splitRule(line string) []string {
	var args []string
	var cur strings.Builder
	inQuote, have := false, false
	for i := 0; i < len(line); i++ {
		ch := line[i]
		switch {
		case ch == '\\' && inQuote && i+1 < len(line):
			i++
			cur.WriteByte(line[i])
		case ch == '"':
			inQuote, have = !inQuote, true
		case ch == ' ' && !inQuote:
			if have || cur.Len() > 0 {
				args = append(args, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteByte(ch)
		}
	}
	if have || cur.Len() > 0 {
		args = append(args, cur.String())
	}
	return args
}

// unmount detaches a mount point (lazily, so a busy one goes as soon as nothing uses it).
func unmount(path string) error {
	if err := syscall.Unmount(path, syscall.MNT_DETACH); err != nil && err != syscall.EINVAL && err != syscall.ENOENT {
		return fmt.Errorf("unmount %s: %w", path, err)
	}
	return nil
}

// unmountUnder detaches every mount point under dir, deepest first, and says which remain.
func unmountUnder(dir string) []string {
	mounts := mountPoints()
	for i := len(mounts) - 1; i >= 0; i-- {
		if strings.HasPrefix(mounts[i], dir+"/") {
			_ = unmount(mounts[i])
		}
	}
	var left []string
	for _, m := range mountPoints() {
		if strings.HasPrefix(m, dir+"/") {
			left = append(left, m)
		}
	}
	return left
}

// HostBaseline is the host's state as a real node should leave it: SnapshotHost, or, when a run
// died with its real node running (its state file remains, for the next Start to undo), the
// state from before that node.
func HostBaseline() HostState {
	if b, err := os.ReadFile(realNodeHostFile); err == nil {
		var s HostState
		if json.Unmarshal(b, &s) == nil {
			return s
		}
	}
	return SnapshotHost()
}
