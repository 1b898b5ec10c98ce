package pkgfile

import (
	"strings"
	"testing"
)

const spec = `# PIPELINE DEFINITION
# Name: p
components:
  comp-a:
    executorLabel: exec-a
deploymentSpec:
  executors:
    exec-a:
      container:
        image: gangboost:0.1.0
        command: [a, '{{$}}']
pipelineInfo:
  name: p
root:
  dag:
    tasks:
      a:
        componentRef:
          name: comp-a
        taskInfo:
          name: a
schemaVersion: 2.1.0
sdkVersion: kfp-2.14.3
`

const platform = `platforms:
  kubernetes:
    deploymentSpec:
      executors:
        exec-a:
          pvcMount:
          - componentInputParameter: pvc_name
            mountPath: /mnt/pvc
`

func TestParse(t *testing.T) {
	p, err := Parse([]byte(spec + "--- \n# comment only\n---\n" + platform))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Executors["exec-a"].GetContainer().GetCommand(); len(got) != 2 || got[1] != "{{$}}" {
		t.Errorf("executor command %q", got)
	}
	if m := p.Kubernetes["exec-a"].GetPvcMount(); len(m) != 1 || m[0].GetMountPath() != "/mnt/pvc" {
		t.Errorf("pvcMount %v", m)
	}

	// Without a platform document: an empty one, no executor configs.
	p, err = Parse([]byte(spec))
	if err != nil || len(p.Kubernetes) != 0 || len(p.Platform.GetPlatforms()) != 0 {
		t.Errorf("spec alone: %v, %v", p, err)
	}

	// (protojson's own messages vary their spacing from build to build: only their words are checked.)
	for name, tc := range map[string]struct{ doc, want string }{
		"empty":                             {"# nothing\n", "empty pipeline package"},
		"unknown field in the spec":         {spec + "extra: 1\n", `unknown field "extra"`},
		"unknown field in an executor":      {spec + "---\n" + strings.Replace(platform, "pvcMount:", "pvcMounts:", 1), `platforms.kubernetes executor exec-a: `},
		"unknown field in the platform doc": {spec + "---\n" + platform + "extra: 1\n", `platform document (second YAML document)`},
		"three documents":                   {spec + "---\n" + platform + "---\nx: 1\n", "3 YAML documents"},
	} {
		if _, err := Parse([]byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", name, err, tc.want)
		}
	}
}
