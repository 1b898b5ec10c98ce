package localrun

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Every name from a package, its parameters or its steps' outputs that becomes part of a path on
// this machine (the pipeline's name, a task's, an output artifact's or parameter's, a claim's)
// goes through under, so that what the run writes stays inside the work folder: a task named
// "../../x" must not put its folder, executor_input.json or log anywhere else.

// under joins names below dir, each one path element, and checks the result is inside dir.
func under(dir string, names ...string) (string, error) {
	p := dir
	for _, n := range names {
		if err := pathElement(n); err != nil {
			return "", err
		}
		p = filepath.Join(p, n)
	}
	return p, inside(dir, p)
}

// belowDir joins a relative path (a claim-relative path a step output, with folders) below dir,
// refusing one that leaves it.
func belowDir(dir, rel string) (string, error) {
	if strings.ContainsRune(rel, 0) {
		return "", fmt.Errorf("path %q holds a NUL byte", rel)
	}
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := inside(dir, p); err != nil {
		return "", fmt.Errorf("path %q: %w", rel, err)
	}
	return p, nil
}

func inside(dir, p string) error {
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return fmt.Errorf("%s is outside %s", p, dir)
	}
	return nil
}

// pathElement checks a name that becomes one element of a path.
func pathElement(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("an empty name cannot name a folder or file")
	case name == "." || name == "..":
		return fmt.Errorf("%q cannot name a folder or file of its own", name)
	case strings.ContainsAny(name, "/\\\x00"):
		return fmt.Errorf("%q holds a path separator or NUL byte: it would name a path elsewhere, not a folder or file", name)
	case len(name) > 255:
		return fmt.Errorf("%q is longer than the 255 bytes a file name may have", name[:32]+"...")
	}
	return nil
}

// checkNames refuses a package with a name that becomes a path element and cannot be one: the
// pipeline's name, the root DAG's task names, and the components' output names.
func checkNames(p *Package) error {
	if err := pathElement(p.Spec.GetPipelineInfo().GetName()); err != nil {
		return fmt.Errorf("pipelineInfo.name: %w", err)
	}
	for _, name := range sortedKeysOf(p.Spec.GetRoot().GetDag().GetTasks()) {
		if err := pathElement(name); err != nil {
			return fmt.Errorf("task name: %w", err)
		}
	}
	for _, cname := range sortedKeysOf(p.Spec.GetComponents()) {
		outs := p.Spec.GetComponents()[cname].GetOutputDefinitions()
		for _, name := range sortedKeysOf(outs.GetArtifacts()) {
			if err := pathElement(name); err != nil {
				return fmt.Errorf("component %s output artifact name: %w", cname, err)
			}
		}
		for _, name := range sortedKeysOf(outs.GetParameters()) {
			if err := pathElement(name); err != nil {
				return fmt.Errorf("component %s output parameter name: %w", cname, err)
			}
		}
	}
	return nil
}
