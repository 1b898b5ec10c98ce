// Package pkgfile reads a compiled pipeline package, the YAML file KFP's SDK writes and KFP's
// API server takes on upload: the PipelineSpec, then optionally the platform document
// (`platforms: {kubernetes: ...}`). Both are parsed with strict protojson, as KFP's API server
// parses them: an unknown field is an error here, where the server would drop the whole platform
// document silently.
package pkgfile

import (
	"bytes"
	"fmt"
	"os"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	"github.com/kubeflow/pipelines/kubernetes_platform/go/kubernetesplatform"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"
)

// Package is a parsed pipeline package.
type Package struct {
	Spec *pipelinespec.PipelineSpec
	// Platform is the platform document; empty when the file has none.
	Platform *pipelinespec.PlatformSpec
	// Executors are deploymentSpec.executors, by executor label (exec-x).
	Executors map[string]*pipelinespec.PipelineDeploymentConfig_ExecutorSpec
	// Kubernetes is platforms.kubernetes.deploymentSpec.executors, typed, by executor label;
	// executors without platform configuration have no entry.
	Kubernetes map[string]*kubernetesplatform.KubernetesExecutorConfig
}

// strict is KFP's API server's parsing: no unknown field.
var strict = protojson.UnmarshalOptions{DiscardUnknown: false}

// Read reads a package file (see Parse).
func Read(path string) (*Package, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Parse parses a package: one PipelineSpec document and at most one platform document, each with
// no unknown field, the deployment spec's executors and every Kubernetes executor config typed.
func Parse(data []byte) (*Package, error) {
	docs := splitDocuments(data)
	if len(docs) == 0 {
		return nil, fmt.Errorf("empty pipeline package")
	}
	if len(docs) > 2 {
		return nil, fmt.Errorf("pipeline package has %d YAML documents; want the PipelineSpec and at most one platform document", len(docs))
	}
	p := &Package{Spec: &pipelinespec.PipelineSpec{}, Platform: &pipelinespec.PlatformSpec{},
		Executors:  map[string]*pipelinespec.PipelineDeploymentConfig_ExecutorSpec{},
		Kubernetes: map[string]*kubernetesplatform.KubernetesExecutorConfig{}}
	if err := unmarshalYAML(docs[0], p.Spec); err != nil {
		return nil, fmt.Errorf("pipeline spec (first YAML document): %w", err)
	}
	if ds := p.Spec.GetDeploymentSpec(); ds != nil {
		deployment := &pipelinespec.PipelineDeploymentConfig{}
		if err := remarshal(ds, deployment); err != nil {
			return nil, fmt.Errorf("deploymentSpec: %w", err)
		}
		p.Executors = deployment.GetExecutors()
	}
	if len(docs) == 1 {
		return p, nil
	}
	if err := unmarshalYAML(docs[1], p.Platform); err != nil {
		return nil, fmt.Errorf("platform document (second YAML document): %w", err)
	}
	for exec, s := range p.Platform.GetPlatforms()["kubernetes"].GetDeploymentSpec().GetExecutors() {
		cfg := &kubernetesplatform.KubernetesExecutorConfig{}
		if err := remarshal(s, cfg); err != nil {
			return nil, fmt.Errorf("platform document (second YAML document): platforms.kubernetes executor %s: %w", exec, err)
		}
		p.Kubernetes[exec] = cfg
	}
	return p, nil
}

// remarshal parses a generic Struct of the package as its typed message, strictly.
func remarshal(from, to proto.Message) error {
	js, err := protojson.Marshal(from)
	if err != nil {
		return err
	}
	return strict.Unmarshal(js, to)
}

func unmarshalYAML(doc []byte, m proto.Message) error {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return err
	}
	return strict.Unmarshal(js, m)
}

// splitDocuments splits a YAML stream at its "---" lines, dropping documents that hold only
// comments or blank lines (the package's header).
func splitDocuments(b []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	flush := func() {
		if hasContent(cur.Bytes()) {
			docs = append(docs, append([]byte(nil), cur.Bytes()...))
		}
		cur.Reset()
	}
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		if t := bytes.TrimRight(line, " \t\r\n"); bytes.Equal(t, []byte("---")) || bytes.HasPrefix(t, []byte("--- ")) {
			flush()
			continue
		}
		cur.Write(line)
	}
	flush()
	return docs
}

func hasContent(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		t := bytes.TrimSpace(line)
		if len(t) > 0 && t[0] != '#' {
			return true
		}
	}
	return false
}
