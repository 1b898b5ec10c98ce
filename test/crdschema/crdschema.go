// Package crdschema checks an object against a CustomResourceDefinition the way the API server
// does on create: fields the schema does not know (which the server would prune, silently), the
// OpenAPI schema, and the CEL rules (x-kubernetes-validations). The CRDs come from the Go module
// that ships them, at the version the product's go.mod requires.
package crdschema

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/runtime"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

// Schema is one version of a CRD's schema, ready to check objects.
type Schema struct {
	Kind       string
	structural *structuralschema.Structural
	validator  validation.SchemaValidator
	cel        *cel.Validator
}

// ModuleFile is the path of rel inside module's folder in the module cache, module at the version
// the go.mod of the working directory's module selects (go list -m).
func ModuleFile(module, rel string) (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, ee.Stderr)
		}
		return "", fmt.Errorf("go list -m %s: %w (is it in go.mod?)", module, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("go list -m %s: no folder (run go mod download)", module)
	}
	return filepath.Join(dir, rel), nil
}

// FromModule loads version of the CRD at rel in module (ModuleFile, then Load).
func FromModule(module, rel, version string) (*Schema, error) {
	file, err := ModuleFile(module, rel)
	if err != nil {
		return nil, err
	}
	return Load(file, version)
}

// Load reads the CRD in file and returns the schema of its served version.
func Load(file, version string) (*Schema, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(b, &crd); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != version || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		var props apiextensions.JSONSchemaProps
		if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &props, nil); err != nil {
			return nil, fmt.Errorf("%s %s: %w", file, version, err)
		}
		s, err := structuralschema.NewStructural(&props)
		if err != nil {
			return nil, fmt.Errorf("%s %s: not a structural schema: %w", file, version, err)
		}
		sv, _, err := validation.NewSchemaValidator(&props)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", file, version, err)
		}
		return &Schema{Kind: crd.Spec.Names.Kind, structural: s, validator: sv, cel: cel.NewValidator(s, true, celconfig.PerCallLimit)}, nil
	}
	return nil, fmt.Errorf("%s: no version %s with a schema", file, version)
}

// Check returns what the API server would say of obj (a typed object or its JSON as a map) on
// create: each field the schema does not know, each schema violation and each CEL rule broken.
func (s *Schema) Check(obj any) []string {
	var u map[string]any
	switch o := obj.(type) {
	case map[string]any:
		u = runtime.DeepCopyJSON(o)
	default:
		b, err := json.Marshal(obj)
		if err == nil {
			err = json.Unmarshal(b, &u)
		}
		if err != nil {
			return []string{err.Error()}
		}
		// Numbers as the API server decodes them (int64 where whole).
		conv, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err == nil {
			u = conv
		}
	}
	var problems []string
	for _, p := range pruning.PruneWithOptions(u, s.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}) {
		problems = append(problems, "unknown field "+p)
	}
	for _, e := range validation.ValidateCustomResource(nil, u, s.validator) {
		problems = append(problems, e.Error())
	}
	errs, _ := s.cel.Validate(context.Background(), nil, s.structural, u, nil, celconfig.RuntimeCELCostBudget)
	for _, e := range errs {
		problems = append(problems, e.Error())
	}
	return problems
}
