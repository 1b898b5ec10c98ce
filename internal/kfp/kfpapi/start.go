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
	// ExperimentID is the run's experiment; else Experiment names it, found or created in
	// Namespace (what multi-user KFP requires: a run's namespace is its experiment's); neither:
	// KFP's default experiment (single-user KFP only).
	ExperimentID, Experiment string
	// Name is the run's display name; default "<Pipeline> <UTC time>".
	Name string
	// ServiceAccount runs the run's pods; default KFP's.
	ServiceAccount string
	// Params are name=value pairs, typed as the version's spec declares them.
	Params []string
	// Warn hears what the run goes on without; may be nil. Info hears what was done on the
	// way (an experiment created); may be nil.
	Warn, Info func(string)
}

// NoPipelineError is StartRun's error when no pipeline has the name.
type NoPipelineError struct{ Name, Host, Namespace string }

func (e *NoPipelineError) Error() string {
	if e.Namespace == "" {
		return fmt.Sprintf("no pipeline named %s on %s (none shared; one uploaded into a profile is found with --namespace)", e.Name, e.Host)
	}
	return fmt.Sprintf("no pipeline named %s on %s in namespace %s or shared", e.Name, e.Host, e.Namespace)
}

// StartRun starts a run of a pipeline version, its parameters typed by the version's pipeline
// spec (fetched when a listing leaves it out; without one, by their look: 3 a number, x a
// string).
func (c *Client) StartRun(ctx context.Context, o RunOptions) (*Run, error) {
	pipelineID := o.PipelineID
	if pipelineID == "" {
		// The profile's own pipeline first, then a shared one (uploaded without a namespace).
		p, err := c.FindPipeline(ctx, o.Pipeline, o.Namespace)
		if err == nil && p == nil && o.Namespace != "" {
			p, err = c.FindPipeline(ctx, o.Pipeline, "")
		}
		if err != nil {
			return nil, multiUserHint(err)
		}
		if p == nil {
			return nil, &NoPipelineError{Name: o.Pipeline, Host: c.Host, Namespace: o.Namespace}
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
	experimentID := o.ExperimentID
	if experimentID == "" && o.Experiment != "" {
		e, created, err := c.EnsureExperiment(ctx, o.Experiment, o.Namespace)
		if err != nil {
			return nil, err
		}
		if created && o.Info != nil {
			o.Info(fmt.Sprintf("created experiment %s in namespace %q (%s)", e.DisplayName, e.Namespace, e.ExperimentID))
		}
		experimentID = e.ExperimentID
	}
	name := o.Name
	if name == "" {
		name = o.Pipeline + " " + time.Now().UTC().Format("2006-01-02 15:04:05")
	}
	r, err := c.CreateRun(ctx, &Run{
		DisplayName:              name,
		ExperimentID:             experimentID,
		ServiceAccount:           o.ServiceAccount,
		PipelineVersionReference: &PipelineVersionReference{PipelineID: pipelineID, PipelineVersionID: v.PipelineVersionID},
		RuntimeConfig:            &RuntimeConfig{Parameters: values},
	})
	return r, multiUserHint(err)
}
