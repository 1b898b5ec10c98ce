package localrun

import (
	"bytes"
	"fmt"
	"os"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	"github.com/kubeflow/pipelines/kubernetes_platform/go/kubernetesplatform"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"sigs.k8s.io/yaml"
)

// Package is a compiled pipeline package: the PipelineSpec IR and, when the file has a second YAML
// document, its Kubernetes platform configuration per executor.
type Package struct {
	Spec *pipelinespec.PipelineSpec
	// Executors are deploymentSpec.executors, by executor label (exec-x).
	Executors map[string]*pipelinespec.PipelineDeploymentConfig_ExecutorSpec
	// Kubernetes is platforms.kubernetes.deploymentSpec.executors, by executor label; nil entries
	// for executors without platform configuration.
	Kubernetes map[string]*kubernetesplatform.KubernetesExecutorConfig
}

// ReadPackage reads a pipeline package file (see ParsePackage).
func ReadPackage(path string) (*Package, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := ParsePackage(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// ParsePackage parses the two YAML documents KFP's SDK writes: the PipelineSpec, then optionally
// `platforms: {kubernetes: ...}`. Both are parsed with strict protojson, as KFP's API server does:
// an unknown field is an error here rather than a platform document silently ignored.
func ParsePackage(data []byte) (*Package, error) {
	docs := splitYAMLDocuments(data)
	if len(docs) == 0 {
		return nil, fmt.Errorf("empty pipeline package")
	}
	if len(docs) > 2 {
		return nil, fmt.Errorf("pipeline package has %d YAML documents; want the PipelineSpec and at most one platform document", len(docs))
	}
	spec := &pipelinespec.PipelineSpec{}
	if err := unmarshalYAML(docs[0], spec); err != nil {
		return nil, fmt.Errorf("pipeline spec (first YAML document): %w", err)
	}
	if spec.GetRoot().GetDag() == nil {
		return nil, fmt.Errorf("pipeline spec has no root DAG (is this a component file rather than a pipeline?)")
	}
	p := &Package{Spec: spec, Executors: map[string]*pipelinespec.PipelineDeploymentConfig_ExecutorSpec{},
		Kubernetes: map[string]*kubernetesplatform.KubernetesExecutorConfig{}}
	if ds := spec.GetDeploymentSpec(); ds != nil {
		js, err := protojson.Marshal(ds)
		if err != nil {
			return nil, err
		}
		deployment := &pipelinespec.PipelineDeploymentConfig{}
		if err := protojson.Unmarshal(js, deployment); err != nil {
			return nil, fmt.Errorf("deploymentSpec: %w", err)
		}
		p.Executors = deployment.GetExecutors()
	}
	if len(docs) == 2 {
		platforms := &pipelinespec.PlatformSpec{}
		if err := unmarshalYAML(docs[1], platforms); err != nil {
			return nil, fmt.Errorf("platform spec (second YAML document): %w", err)
		}
		for name, cfg := range platforms.GetPlatforms()["kubernetes"].GetDeploymentSpec().GetExecutors() {
			k, err := kubernetesExecutorConfig(cfg)
			if err != nil {
				return nil, fmt.Errorf("platforms.kubernetes executor %s: %w", name, err)
			}
			p.Kubernetes[name] = k
		}
	}
	return p, nil
}

func kubernetesExecutorConfig(s *structpb.Struct) (*kubernetesplatform.KubernetesExecutorConfig, error) {
	js, err := protojson.Marshal(s)
	if err != nil {
		return nil, err
	}
	k := &kubernetesplatform.KubernetesExecutorConfig{}
	if err := protojson.Unmarshal(js, k); err != nil {
		return nil, err
	}
	return k, nil
}

func unmarshalYAML(doc []byte, m proto.Message) error {
	js, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return err
	}
	return protojson.Unmarshal(js, m)
}

// splitYAMLDocuments splits a YAML stream at "---" lines, dropping documents that hold only
// comments (the package's header).
func splitYAMLDocuments(data []byte) [][]byte {
	var docs [][]byte
	var cur []byte
	flush := func() {
		if len(bytes.TrimSpace(stripComments(cur))) > 0 {
			docs = append(docs, cur)
		}
		cur = nil
	}
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		t := bytes.TrimRight(line, " \t\r\n")
		if bytes.Equal(t, []byte("---")) || bytes.HasPrefix(t, []byte("--- ")) {
			flush()
			continue
		}
		cur = append(cur, line...)
	}
	flush()
	return docs
}

func stripComments(d []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(d, []byte("\n")) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return out
}
