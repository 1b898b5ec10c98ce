package kfpapi

import (
	"errors"
	"fmt"
	"os"

	"github.com/gangboost/gangboost/pipelines"
)

// Upload is a pipeline package file checked for upload, with the options to Publish it under.
type Upload struct {
	Package []byte
	PublishOptions
}

// PrepareUpload reads a package file for Publish and refuses one that KFP's API server would
// take but mishandle: it drops a platform document it cannot parse without a word, so the package
// is parsed as strictly as the server parses it (pipelines.Parse) and checked for what KFP would
// reject or run wrongly (pipelines.Check). An empty o.Name or o.Description becomes the
// package's own pipelineInfo name or description.
func PrepareUpload(file string, o PublishOptions) (*Upload, error) {
	pkg, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	p, err := pipelines.Parse(pkg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if errs := pipelines.Check(p); len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w", file, errors.Join(errs...))
	}
	if o.Name == "" {
		o.Name = p.Spec.GetPipelineInfo().GetName()
	}
	if o.Description == "" {
		o.Description = p.Spec.GetPipelineInfo().GetDescription()
	}
	return &Upload{Package: pkg, PublishOptions: o}, nil
}
