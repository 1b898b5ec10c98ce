package kfpapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/gangboost/gangboost/internal/contract/version"
)

// PublishOptions say under which names a package goes.
type PublishOptions struct {
	// Name is the pipeline's name; Description the pipeline's or the new version's.
	Name, Description string
	// Namespace is the pipeline's profile namespace (multi-user KFP); empty: shared.
	Namespace string
	// Version names the version added to an existing pipeline; default
	// <gangboost version>-<first 12 hex digits of the package's SHA-256>, so the same package
	// is the same version.
	Version string
}

// Published is what Publish did.
type Published struct {
	// Name is the pipeline's name (PublishOptions.Name).
	Name       string
	PipelineID string
	// Created: a new pipeline (KFP made its first version); otherwise a version was added, or
	// Existed.
	Created bool
	// Version and VersionID name the version added or found (not set when Created).
	Version, VersionID string
	// Existed: the pipeline already had a version of that name, and nothing was uploaded.
	Existed bool
}

// String says what Publish did, with the IDs KFP gave, in one line.
func (p *Published) String() string {
	switch {
	case p.Created:
		return fmt.Sprintf("uploaded pipeline %s: pipeline_id %s", p.Name, p.PipelineID)
	case p.Existed:
		return fmt.Sprintf("pipeline %s already has version %s: pipeline_id %s pipeline_version_id %s", p.Name, p.Version, p.PipelineID, p.VersionID)
	default:
		return fmt.Sprintf("uploaded version %s of pipeline %s: pipeline_id %s pipeline_version_id %s", p.Version, p.Name, p.PipelineID, p.VersionID)
	}
}

// Publish uploads pkg as pipeline o.Name, or, when a pipeline of that name exists (or is created
// by someone else meanwhile), as its version o.Version; a version of that name already there is
// reported, not an error. The server picks its parser by the file name, so the package goes as
// <name>.yaml whatever its local file is called.
func (c *Client) Publish(ctx context.Context, pkg []byte, o PublishOptions) (*Published, error) {
	if o.Version == "" {
		sum := sha256.Sum256(pkg)
		o.Version = version.Version + "-" + hex.EncodeToString(sum[:])[:12]
	}
	fileName := o.Name + ".yaml"
	existing, err := c.FindPipeline(ctx, o.Name, o.Namespace)
	if err != nil {
		return nil, err
	}
	if existing == nil {
		created, err := c.UploadPipeline(ctx, fileName, pkg, UploadOptions{Name: o.Name, DisplayName: o.Name, Description: o.Description, Namespace: o.Namespace})
		switch {
		case err == nil:
			return &Published{Name: o.Name, PipelineID: created.PipelineID, Created: true}, nil
		case !IsConflict(err):
			return nil, err
		}
		// Created by someone else since the lookup: add a version instead.
		if existing, err = c.FindPipeline(ctx, o.Name, o.Namespace); err != nil || existing == nil {
			return nil, fmt.Errorf("pipeline %s exists but cannot be listed: %v", o.Name, err)
		}
	}
	v, err := c.UploadPipelineVersion(ctx, existing.PipelineID, fileName, pkg, UploadOptions{Name: o.Version, DisplayName: o.Version, Description: o.Description})
	if IsConflict(err) {
		if same, ferr := c.FindVersion(ctx, existing.PipelineID, o.Version); ferr == nil && same != nil {
			return &Published{Name: o.Name, PipelineID: existing.PipelineID, Version: o.Version, VersionID: same.PipelineVersionID, Existed: true}, nil
		}
	}
	if err != nil {
		return nil, err
	}
	return &Published{Name: o.Name, PipelineID: existing.PipelineID, Version: o.Version, VersionID: v.PipelineVersionID}, nil
}

// PipelineURL is the pipeline's page in the KFP UI.
func (c *Client) PipelineURL(pipelineID string) string {
	return strings.TrimRight(c.Host, "/") + "/#/pipelines/details/" + pipelineID
}
