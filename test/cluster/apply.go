package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// fieldOwner names the test harness in managedFields of what it applies.
const fieldOwner = "gangboost-test"

// DecodeYAML splits a multi-document YAML stream into objects, skipping
// empty documents.
func DecodeYAML(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for i := 0; ; i++ {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(obj) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" {
			return nil, fmt.Errorf("document %d: no kind", i)
		}
		out = append(out, u)
	}
}

// DecodeFiles reads and decodes YAML files.
func DecodeFiles(paths ...string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		objs, err := DecodeYAML(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// Kustomize renders a kustomization folder with `kubectl kustomize`.
func Kustomize(ctx context.Context, dir string) ([]*unstructured.Unstructured, error) {
	cmd := exec.CommandContext(ctx, "kubectl", "kustomize", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl kustomize %s: %w: %s", dir, err, stderr.String())
	}
	return DecodeYAML(out)
}

// inNamespace places namespaced objects (and the ServiceAccount subjects of
// bindings) in ns, as a kustomization's namespace field does.
func inNamespace(objs []*unstructured.Unstructured, ns string) error {
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRole", "ClusterRoleBinding", "Namespace", "CustomResourceDefinition":
		default:
			o.SetNamespace(ns)
		}
		subjects, found, _ := unstructured.NestedSlice(o.Object, "subjects")
		if !found {
			continue
		}
		for _, s := range subjects {
			if sm, ok := s.(map[string]any); ok && sm["kind"] == "ServiceAccount" {
				sm["namespace"] = ns
			}
		}
		if err := unstructured.SetNestedSlice(o.Object, subjects, "subjects"); err != nil {
			return err
		}
	}
	return nil
}

// Apply server-side applies objects in order, CustomResourceDefinitions
// first, and waits for those to be established so that objects of their
// kinds can follow in the same call.
func Apply(ctx context.Context, c client.Client, objs ...*unstructured.Unstructured) error {
	var crds, rest []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, o)
		} else {
			rest = append(rest, o)
		}
	}
	// CRDs are large and independent: applying them side by side takes
	// seconds off a start.
	errs := make([]error, len(crds))
	var wg sync.WaitGroup
	for i, o := range crds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = applyOne(ctx, c, o)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := waitEstablished(ctx, c, crds); err != nil {
		return err
	}
	for _, o := range rest {
		// A kind whose CRD was just established may still be unknown to the
		// client's REST mapper for a moment.
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			err := applyOne(ctx, c, o)
			if err != nil && strings.Contains(err.Error(), "no matches for kind") {
				return false, nil
			}
			return true, err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func applyOne(ctx context.Context, c client.Client, o *unstructured.Unstructured) error {
	o = o.DeepCopy()
	o.SetManagedFields(nil)
	o.SetResourceVersion("")
	if err := c.Patch(ctx, o, client.Apply, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
	}
	return nil
}

func waitEstablished(ctx context.Context, c client.Client, crds []*unstructured.Unstructured) error {
	for _, u := range crds {
		name := u.GetName()
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := c.Get(ctx, client.ObjectKey{Name: name}, &crd); err != nil {
				return false, nil
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established: %w", name, err)
		}
	}
	return nil
}

// ModuleDir downloads (if needed) a module at an exact version into the Go
// module cache and returns its folder. It works outside any go.mod, so the
// manifests of releases the main module does not depend on can be read.
func ModuleDir(ctx context.Context, module, version string) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", module+"@"+version)
	cmd.Dir = os.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	_ = json.Unmarshal(out, &info)
	if err != nil || info.Dir == "" {
		return "", fmt.Errorf("go mod download %s@%s: %v %s %s", module, version, err, info.Error, stderr.String())
	}
	return info.Dir, nil
}

// crdFiles lists the YAML files of a folder of CRDs.
func crdFiles(dir string, names ...string) ([]string, error) {
	var out []string
	for _, n := range names {
		p := filepath.Join(dir, n)
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("CRD file: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}
