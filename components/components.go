// Package components holds every KFP component's spec (components/<name>/component.yaml) in the
// binary, parsed as KFP's API server parses a package: strict protojson into a PipelineSpec.
package components

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/gangboost/gangboost/internal/contract/version"
)

//go:embed */component.yaml
var files embed.FS

// Names are the components whose component.yaml is embedded, sorted.
func Names() []string {
	dirs, err := fs.Glob(files, "*/component.yaml")
	if err != nil {
		panic(err) // the pattern is a constant
	}
	names := make([]string, 0, len(dirs))
	for _, d := range dirs {
		names = append(names, path.Dir(d))
	}
	sort.Strings(names)
	return names
}

// YAML is the component.yaml of the named component, as committed.
func YAML(name string) ([]byte, error) {
	b, err := files.ReadFile(name + "/component.yaml")
	if err != nil {
		return nil, fmt.Errorf("component %q: no components/%s/component.yaml (have %v)", name, name, Names())
	}
	return b, nil
}

// YAMLIn is the component.yaml of the named component with its image in registry instead of
// version.DefaultRegistry (the committed file when registry is the default or empty).
func YAMLIn(name, registry string) ([]byte, error) {
	b, err := YAML(name)
	if err != nil || registry == "" {
		return b, err
	}
	return []byte(version.Rehome(string(b), registry)), nil
}

// Spec is the named component's IR: its component.yaml parsed strictly (an unknown field is an
// error, as in KFP's API server).
func Spec(name string) (*pipelinespec.PipelineSpec, error) {
	b, err := YAML(name)
	if err != nil {
		return nil, err
	}
	return ParseSpec(b)
}

// ParseSpec parses one YAML document of PipelineSpec IR strictly.
func ParseSpec(b []byte) (*pipelinespec.PipelineSpec, error) {
	js, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("component spec: %w", err)
	}
	var spec pipelinespec.PipelineSpec
	if err := (protojson.UnmarshalOptions{DiscardUnknown: false}).Unmarshal(js, &spec); err != nil {
		return nil, fmt.Errorf("component spec is not a PipelineSpec: %w", err)
	}
	return &spec, nil
}
