package manifests

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// clusterTargets apply the files of this folder and operator-config/ to a cluster.
var clusterTargets = []string{"install-volcano", "install-volcano-full", "verify-volcano", "configure-training-operator",
	"configure-training-operator-full", "deploy-runtime",
	"deploy-example", "status", "logs", "describe-job", "port-forward", "clean-app", "clean-all"}

// makeDryRun is what `make -n target` would run, with kubectl as it is.
func makeDryRun(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command("make", append([]string{"--no-print-directory", "-n"}, args...)...)
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// Every cluster target prints kubectl commands whose -f and -k paths exist in the repository,
// so a renamed manifest breaks this test rather than a user's make.
func TestClusterTargetsApplyFilesThatExist(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatal("make is required")
	}
	path := regexp.MustCompile(`\s-(?:f|k)\s+(\S+)`)
	for _, target := range clusterTargets {
		out := makeDryRun(t, target, "JOB=iris-train", "KUBECTL=kubectl")
		if !strings.Contains(out, "kubectl ") {
			t.Errorf("%s runs no kubectl command:\n%s", target, out)
		}
		for _, m := range path.FindAllStringSubmatch(out, -1) {
			p := m[1]
			if strings.HasPrefix(p, "http") || p == "-" { // - is a rendering piped in
				continue
			}
			if _, err := os.Stat(filepath.Join("..", p)); err != nil {
				t.Errorf("%s applies %s, which does not exist", target, p)
			}
		}
	}
}

// make help lists every target the Makefile declares phony, with one line each.
func TestMakeHelpListsEveryTarget(t *testing.T) {
	cmd := exec.Command("make", "--no-print-directory", "help")
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make help: %v\n%s", err, out)
	}
	mk, err := os.ReadFile(filepath.Join("..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	phony := regexp.MustCompile(`(?s)\.PHONY:(.*?)\n\n`).FindSubmatch(mk)
	if phony == nil {
		t.Fatal("no .PHONY line in the Makefile")
	}
	for _, target := range strings.Fields(strings.ReplaceAll(string(phony[1]), "\\", " ")) {
		if target == "all" {
			continue
		}
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(target) + `\s+\S`).Match(out) {
			t.Errorf("make help does not describe %s:\n%s", target, out)
		}
	}
}

// The Volcano settings render with kustomize as they are (the training operator's full overlay
// fetches its upstream base, so the control plane tests render that one). operator-config/volcano,
// what install-volcano applies to a cluster running Volcano, holds only gangboost's own objects;
// volcano-full adds the scheduler ConfigMap for a fresh cluster.
func TestVolcanoOverlayRenders(t *testing.T) {
	render := func(dir string) string {
		out, err := exec.Command("kubectl", "kustomize", "../operator-config/"+dir).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl kustomize operator-config/%s: %v\n%s", dir, err, out)
		}
		return string(out)
	}
	minimal, full := render("volcano"), render("volcano-full")
	for _, want := range []string{"kind: Queue", "name: ml-training", "kind: PriorityClass"} {
		if !strings.Contains(minimal, want) || !strings.Contains(full, want) {
			t.Errorf("operator-config/volcano or volcano-full lacks %q", want)
		}
	}
	if !strings.Contains(full, "volcano-scheduler-configmap") {
		t.Error("operator-config/volcano-full lacks volcano-scheduler-configmap")
	}
	if strings.Contains(minimal, "volcano-scheduler-configmap") || strings.Contains(minimal, "kind: ConfigMap") {
		t.Errorf("operator-config/volcano replaces Volcano's scheduler ConfigMap:\n%s", minimal)
	}
}

// The targets for an existing install download nothing and replace no Deployment: install-volcano
// and configure-training-operator apply only this repository's folders and patch the operator in
// place; only the -full targets fetch upstream installs.
func TestExistingInstallTargetsStayOffline(t *testing.T) {
	for _, target := range []string{"install-volcano", "configure-training-operator"} {
		out := makeDryRun(t, target, "KUBECTL=kubectl")
		if strings.Contains(out, "https://") || regexp.MustCompile(`-k\s+\S+-full`).MatchString(out) {
			t.Errorf("%s fetches or applies an upstream install:\n%s", target, out)
		}
	}
	if out := makeDryRun(t, "configure-training-operator", "KUBECTL=kubectl"); !strings.Contains(out, "scripts/configure-training-operator.sh") {
		t.Errorf("configure-training-operator does not patch the existing Deployment:\n%s", out)
	}
	if out := makeDryRun(t, "clean-app", "KUBECTL=kubectl"); strings.Contains(out, "--all") || !strings.Contains(out, "xgboostjobs -l ") {
		t.Errorf("clean-app deletes XGBoostJobs other than gangboost's:\n%s", out)
	}
}
