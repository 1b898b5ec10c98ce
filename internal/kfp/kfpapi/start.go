package kfpapi

import (
	"context"
	"fmt"
	"time"
)

// RunOptions say what to run, and how.
type RunOptions struct {
	// PipelineID, else the pipeline named Pipeline (in Namespace, when set).
	Pipeline, PipelineID, Namespace string
	// VersionID is the version to run; default the newest.
	VersionID string
	// ExperimentID is the run's experiment; default KFP's default experiment.
	ExperimentID string
	// Name is the run's display name; default "<Pipeline> <UTC time>".
	Name string
	// ServiceAccount runs the run's pods; default KFP's.
	ServiceAccount string
	// Params are name=value pairs, typed as the version's spec declares them.
	Params []string
	// Warn hears what the run goes on without; may be nil.
	Warn func(string)
}

// NoPipelineError is StartRun's error when no pipeline has the name.
type NoPipelineError struct{ Name, Host string }

func (e *NoPipelineError) Error() string {
	return fmt.Sprintf("no pipeline named %s on %s", e.Name, e.Host)
}

// StartRun starts a run of a pipeline version, its parameters typed by the version's pipeline
// spec (fetched when a listing leaves it out; without one, by their look: 3 a number, x a
// string).
func (c *Client) StartRun(ctx context.Context, o RunOptions) (*Run, error) {
	pipelineID := o.PipelineID
	if pipelineID == "" {
		p, err := c.FindPipeline(ctx, o.Pipeline, o.Namespace)
		if err != nil {
			return nil, err
		}
		if p == nil {
			return nil, &NoPipelineError{Name: o.Pipeline, Host: c.Host}
		}
		pipelineID = p.PipelineID
	}
	var v *PipelineVersion
	var err error
	if o.VersionID != "" {
		v, err = c.GetVersion(ctx, pipelineID, o.VersionID)
	} else {
		v, err = c.LatestVersion(ctx, pipelineID)
	}
	if err != nil {
		return nil, err
	}
	if len(v.PipelineSpec) == 0 {
		// A listing may leave the spec out; the version itself carries it.
		if full, err := c.GetVersion(ctx, pipelineID, v.PipelineVersionID); err == nil {
			v = full
		}
	}
	var types map[string]string
	if len(v.PipelineSpec) == 0 {
		if o.Warn != nil {
			o.Warn(fmt.Sprintf("version %s has no pipeline_spec; parameters are typed by their look (3 is a number, x a string)", v.PipelineVersionID))
		}
	} else if types, err = ParameterTypes(v.PipelineSpec); err != nil {
		return nil, fmt.Errorf("version %s: %w", v.PipelineVersionID, err)
	}
	values, err := TypedParameters(o.Params, types)
	if err != nil {
		return nil, err
	}
	name := o.Name
	if name == "" {
		name = o.Pipeline + " " + time.Now().UTC().Format("2006-01-02 15:04:05")
	}
	return c.CreateRun(ctx, &Run{
		DisplayName:              name,
		ExperimentID:             o.ExperimentID,
		ServiceAccount:           o.ServiceAccount,
		PipelineVersionReference: &PipelineVersionReference{PipelineID: pipelineID, PipelineVersionID: v.PipelineVersionID},
		RuntimeConfig:            &RuntimeConfig{Parameters: values},
	})
}
