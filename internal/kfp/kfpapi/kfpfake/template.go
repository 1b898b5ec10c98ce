package kfpfake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/kubeflow/pipelines/api/v2alpha1/go/pipelinespec"
	"google.golang.org/protobuf/encoding/protojson"
	goyaml "gopkg.in/yaml.v3"
	"sigs.k8s.io/yaml"
)

// ReadPackage reads a pipeline package the way KFP's API server does on upload
// (backend/src/apiserver/template/v2_template.go, NewV2SpecTemplate): each YAML document is
// decoded with yaml.v3; the one that parses strictly as a PipelineSpec with a name and a root is
// the spec (schemaVersion 2.1.0 required); a document that parses strictly as a PlatformSpec with
// a kubernetes entry is the platform spec. Any other document, a platform document with one
// unknown field included, is skipped without a word: platform is then nil.
func ReadPackage(pkg []byte) (*pipelinespec.PipelineSpec, *pipelinespec.PlatformSpec, error) {
	var spec *pipelinespec.PipelineSpec
	var platform *pipelinespec.PlatformSpec
	dec := goyaml.NewDecoder(bytes.NewReader(pkg))
	for {
		var value map[string]any
		err := dec.Decode(&value)
		if errors.Is(err, io.EOF) {
			break
		}
		if value == nil {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("unable to decode yaml document: %w", err)
		}
		if s := asPipelineSpec(value); s != nil {
			if spec != nil {
				return nil, nil, errors.New("multiple pipeline specs provided")
			}
			if s.GetSchemaVersion() != "2.1.0" {
				return nil, nil, fmt.Errorf("KFP only supports schema version 2.1.0, but the pipeline spec has version %s", s.GetSchemaVersion())
			}
			spec = s
			continue
		}
		valueBytes, err := goyaml.Marshal(&value)
		if err != nil {
			return nil, nil, err
		}
		js, err := yaml.YAMLToJSON(valueBytes)
		if err != nil {
			continue
		}
		var p pipelinespec.PlatformSpec
		if protojson.Unmarshal(js, &p) != nil {
			continue
		}
		if _, ok := p.GetPlatforms()["kubernetes"]; !ok {
			continue
		}
		if platform != nil {
			return nil, nil, errors.New("multiple platform specs provided")
		}
		platform = &p
	}
	if spec == nil {
		return nil, nil, errors.New("no pipeline spec is provided")
	}
	return spec, platform, nil
}

func asPipelineSpec(value map[string]any) *pipelinespec.PipelineSpec {
	js, err := json.Marshal(value)
	if err != nil {
		return nil
	}
	var spec pipelinespec.PipelineSpec
	if protojson.Unmarshal(js, &spec) != nil || spec.GetPipelineInfo().GetName() == "" || spec.GetRoot() == nil {
		return nil
	}
	return &spec
}
