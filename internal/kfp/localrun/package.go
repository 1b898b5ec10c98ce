package localrun

import (
	"fmt"

	"github.com/gangboost/gangboost/internal/kfp/pkgfile"
)

// Package is a compiled pipeline package (pkgfile.Package): the PipelineSpec IR, its executors and
// the Kubernetes platform configuration per executor.
type Package = pkgfile.Package

// ReadPackage reads a pipeline package file (see ParsePackage).
func ReadPackage(path string) (*Package, error) {
	p, err := pkgfile.Read(path)
	if err != nil {
		return nil, err
	}
	if err := runnable(p); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// ParsePackage parses a package as KFP's API server does (strictly, pkgfile.Parse) and checks that
// it has a root DAG to run, that every name that becomes a path is one path element (checkNames),
// and that no executor's env makes a step load or run other code (checkEnv).
func ParsePackage(data []byte) (*Package, error) {
	p, err := pkgfile.Parse(data)
	if err != nil {
		return nil, err
	}
	if err := runnable(p); err != nil {
		return nil, err
	}
	return p, nil
}

func runnable(p *Package) error {
	if p.Spec.GetRoot().GetDag() == nil {
		return fmt.Errorf("pipeline spec has no root DAG (is this a component file rather than a pipeline?)")
	}
	if err := checkNames(p); err != nil {
		return err
	}
	return checkEnv(p)
}
