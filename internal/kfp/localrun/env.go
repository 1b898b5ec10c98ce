package localrun

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
)

// A package's executor env is configuration for the executor's own program. The runner runs only
// programs from its bin folder, so a package must not be able to make that program load or run
// other code, or read its configuration or trust from a place the package chooses. These are the
// variables that do so; a package may set any other variable with a portable name.
var (
	// refusedEnvPrefixes are families of such variables.
	refusedEnvPrefixes = []struct{ prefix, why string }{
		{"LD_", "the dynamic loader loads shared objects by it (LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT)"},
		{"MALLOC_", "glibc's allocator reads it (glibc clears it for privileged programs)"},
		{"GANGBOOST_", "the runner sets the GANGBOOST_ environment of a step itself, and the trainer takes its flags from it"},
		{"BASH_FUNC_", "bash imports functions from it"},
		{"OMP_TOOL", "the OpenMP runtime (libxgboost's threads) loads the tool libraries it names"},
		{"SSL_CERT_", "it decides which servers a step trusts"},
	}
	// refusedEnv are single such variables: glibc's list of variables it clears for privileged
	// programs (UNSECURE_ENVVARS, sysdeps/generic/unsecvars.h), and the ones by which a step
	// finds programs, configuration and credentials.
	refusedEnv = map[string]string{
		"GCONV_PATH":       "glibc loads character set converters (shared objects) from it",
		"GETCONF_DIR":      "glibc clears it for privileged programs",
		"GLIBC_TUNABLES":   "it tunes glibc's loader and allocator",
		"HOSTALIASES":      "the resolver reads host aliases from the file it names",
		"LOCALDOMAIN":      "it changes how the resolver looks names up",
		"LOCPATH":          "glibc loads locale data from it",
		"NIS_PATH":         "glibc clears it for privileged programs",
		"NLSPATH":          "glibc loads message catalogs from it",
		"RESOLV_HOST_CONF": "the resolver reads its configuration from the file it names",
		"RES_OPTIONS":      "it changes how the resolver looks names up",
		"TMPDIR":           "glibc clears it for privileged programs",
		"TZDIR":            "glibc loads time zone files from it",
		"PATH":             "a step starts programs by name through it",
		"HOME":             "a step finds its configuration (~/.kube/config) through it",
		"XDG_CONFIG_HOME":  "a step finds its configuration through it",
		"KUBECONFIG":       "a kubeconfig's exec credential plugin runs a program",
		"BASH_ENV":         "bash runs the file it names",
		"ENV":              "sh runs the file it names",
		"SHELLOPTS":        "it changes how a shell runs",
		"IFS":              "it changes how a shell splits words",
	}
	portableEnvName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// checkEnv refuses a package whose executors set a variable a package may not set, naming the
// executor, the variable and why.
func checkEnv(p *Package) error {
	for _, label := range sortedKeysOf(p.Executors) {
		for _, e := range p.Executors[label].GetContainer().GetEnv() {
			if err := packageMaySet(e); err != nil {
				return fmt.Errorf("executor %s sets env %q, which a pipeline package may not set: %v", label, e.GetName(), err)
			}
		}
	}
	return nil
}

func packageMaySet(e *pipelinespec.PipelineDeploymentConfig_PipelineContainerSpec_EnvVar) error {
	name := e.GetName()
	if !portableEnvName.MatchString(name) {
		return fmt.Errorf("want a name of letters, digits and _, not starting with a digit")
	}
	if strings.ContainsRune(e.GetValue(), 0) {
		return fmt.Errorf("its value holds a NUL byte")
	}
	upper := strings.ToUpper(name)
	if why, ok := refusedEnv[upper]; ok {
		return fmt.Errorf("%s", why)
	}
	for _, r := range refusedEnvPrefixes {
		if strings.HasPrefix(upper, r.prefix) {
			return fmt.Errorf("%s", r.why)
		}
	}
	return nil
}

func sortedKeysOf[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
