package kfpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Experiment is a v2beta1 Experiment: in multi-user KFP every run belongs to one, and its
// namespace is the run's.
type Experiment struct {
	ExperimentID string `json:"experiment_id,omitempty"`
	DisplayName  string `json:"display_name"`
	Description  string `json:"description,omitempty"`
	Namespace    string `json:"namespace,omitempty"`
}

// FindExperiment is the experiment named name in namespace (empty: single-user KFP's), or nil
// when there is none: GET /apis/v2beta1/experiments with a display_name EQUALS filter.
func (c *Client) FindExperiment(ctx context.Context, name, namespace string) (*Experiment, error) {
	q := url.Values{"filter": {equalsFilter("display_name", name)}, "page_size": {"2"}}
	setIf(q, "namespace", namespace)
	var list struct {
		Experiments []Experiment `json:"experiments"`
	}
	if err := c.do(ctx, http.MethodGet, "/apis/v2beta1/experiments", q, nil, "", &list); err != nil {
		return nil, err
	}
	switch len(list.Experiments) {
	case 0:
		return nil, nil
	case 1:
		return &list.Experiments[0], nil
	}
	return nil, fmt.Errorf("KFP has %d experiments named %q in namespace %q; pass --experiment-id", len(list.Experiments), name, namespace)
}

// CreateExperiment creates the experiment name in namespace: POST /apis/v2beta1/experiments.
func (c *Client) CreateExperiment(ctx context.Context, name, namespace string) (*Experiment, error) {
	body, err := json.Marshal(Experiment{DisplayName: name, Namespace: namespace, Description: "runs started by gangboost pipeline run"})
	if err != nil {
		return nil, err
	}
	var e Experiment
	if err := c.do(ctx, http.MethodPost, "/apis/v2beta1/experiments", nil, bytes.NewReader(body), "application/json", &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// EnsureExperiment is the experiment name in namespace, created when there is none (created
// says so). Two callers racing to create it both end with the one that exists.
func (c *Client) EnsureExperiment(ctx context.Context, name, namespace string) (e *Experiment, created bool, err error) {
	if e, err = c.FindExperiment(ctx, name, namespace); err != nil || e != nil {
		return e, false, multiUserHint(err)
	}
	e, err = c.CreateExperiment(ctx, name, namespace)
	if IsConflict(err) {
		e, err = c.FindExperiment(ctx, name, namespace)
		if err == nil && e == nil {
			err = fmt.Errorf("experiment %q in namespace %q exists but cannot be listed", name, namespace)
		}
		return e, false, multiUserHint(err)
	}
	return e, err == nil, multiUserHint(err)
}

// multiUserHint adds what to do to the refusals of a multi-user KFP (Kubeflow's profiles).
func multiUserHint(err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	switch {
	case strings.Contains(e.Message, "Experiment id can not be empty in multi-user mode"):
		return fmt.Errorf("%w: this KFP runs in multi-user mode (Kubeflow profiles): give --experiment NAME (found or created in --namespace) and --namespace <your profile namespace>", err)
	case strings.Contains(e.Message, "empty namespace in multi-user mode"):
		return fmt.Errorf("%w: this KFP runs in multi-user mode (Kubeflow profiles): give --namespace <your profile namespace>", err)
	case e.Status == http.StatusForbidden || e.Code == 7:
		return fmt.Errorf("%w: the token's identity may not use this namespace: use your own profile's namespace (--namespace), or a token of an account with access to it", err)
	}
	return err
}
