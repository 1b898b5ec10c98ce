package stepcmd

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/components"
	"github.com/gangboost/gangboost/internal/kfp"
)

// Every component.yaml's command is a command here, and nothing else is.
func TestEveryComponentHasItsCommand(t *testing.T) {
	names := components.Names()
	for _, name := range names {
		spec, err := components.Spec(name)
		if err != nil {
			t.Fatal(err)
		}
		c := spec.GetComponents()["comp-"+name]
		exec := spec.GetDeploymentSpec().GetFields()["executors"].GetStructValue().GetFields()[c.GetExecutorLabel()]
		cmd := exec.GetStructValue().GetFields()["container"].GetStructValue().GetFields()["command"].GetListValue().GetValues()
		if len(cmd) == 0 {
			t.Fatalf("%s: no container command", name)
		}
		if _, ok := Commands[cmd[0].GetStringValue()]; !ok {
			t.Errorf("%s runs %q, which is not among %v", name, cmd[0].GetStringValue(), Names())
		}
	}
	if len(Commands) != len(names) {
		t.Errorf("commands %v, components %v", Names(), names)
	}
}

// Main runs the component its name says: a link's base name, else the first argument.
func TestMainDispatch(t *testing.T) {
	saved := Commands
	defer func() { Commands = saved }()
	var ran string
	var got []string
	Commands = map[string]func([]string) int{}
	for name := range saved {
		Commands[name] = func(args []string) int { ran, got = name, args; return 0 }
	}
	for _, tc := range []struct {
		argv      []string
		code      int
		ran, args string
		stderr    string
	}{
		{argv: []string{"/usr/local/bin/launch-xgboostjob", "--executor-input", "{}"}, ran: "launch-xgboostjob", args: "--executor-input {}"},
		{argv: []string{"evaluate"}, ran: "evaluate"},
		{argv: []string{"bin/gangboost-components", "prepare-data", "--help"}, ran: "prepare-data", args: "--help"},
		// A link's name wins over an argument that names another component.
		{argv: []string{"deploy-inferenceservice", "evaluate"}, ran: "deploy-inferenceservice", args: "evaluate"},
		{argv: []string{"gangboost-components"}, code: 2, stderr: "no component named"},
		{argv: []string{"gangboost-components", "train"}, code: 2, stderr: `no component "train"`},
		{argv: []string{"gangboost-components", "--help"}, stderr: "components: deploy-inferenceservice, evaluate, launch-xgboostjob, prepare-data, promote-model"},
		{argv: nil, code: 2, stderr: "usage: gangboost-components <component>"},
	} {
		ran, got = "", nil
		var stderr bytes.Buffer
		code := Main(tc.argv, &stderr)
		if code != tc.code || ran != tc.ran || strings.Join(got, " ") != tc.args || !strings.Contains(stderr.String(), tc.stderr) {
			t.Errorf("Main(%q) = %d, ran %q with %q, stderr %q; want %d, %q with %q, stderr with %q",
				tc.argv, code, ran, got, stderr.String(), tc.code, tc.ran, tc.args, tc.stderr)
		}
	}
}

// The local backends say what they miss, before anything starts.
func TestLocalBackendsSayWhatIsMissing(t *testing.T) {
	t.Setenv(kfp.EnvBinDir, t.TempDir())
	t.Setenv(kfp.EnvLocalState, "")
	if _, err := localServingBackend(); err == nil || !strings.Contains(err.Error(), "GANGBOOST_LOCAL_STATE") {
		t.Errorf("serving backend without a state folder: %v", err)
	}
	if _, err := localJobBackend("mnt/pvc"); err == nil || !strings.Contains(err.Error(), `must be an absolute path, got "mnt/pvc"`) {
		t.Errorf("job backend on a relative claim: %v", err)
	}
	b, err := localJobBackend("/mnt/pvc")
	if err != nil || !strings.HasSuffix(b.Trainer, "/gangboost-train") || b.Root != "/mnt/pvc" {
		t.Errorf("job backend = %+v, %v", b, err)
	}
}
