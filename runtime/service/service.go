// Package service is what REST and gRPC handlers call: find a ready model, enforce the request
// limits, and evaluate through the model's predictor (the adaptive batcher when batching is on).
package service

import (
	"sync"

	"github.com/gangboost/gangboost/internal/forest"
	"github.com/gangboost/gangboost/runtime/batcher"
	"github.com/gangboost/gangboost/runtime/infer"
	"github.com/gangboost/gangboost/runtime/metrics"
	"github.com/gangboost/gangboost/runtime/registry"
)

// Name and Version are what GET /v2 reports.
const (
	Name    = "gangboost"
	Version = "0.1.0"
)

// Extensions are the V2 protocol extensions this server implements.
var Extensions = []string{"binary_tensor_data", "model_repository"}

// Service serves the models of one registry.
type Service struct {
	Registry *registry.Registry
	Metrics  *metrics.Metrics
	MaxRows  int             // rows per request; 0 = no limit
	Batching batcher.Options // MaxBatchRows 0 = no batching

	mu         sync.Mutex
	predictors map[*forest.Model]infer.Predictor
}

// Model returns a ready model and its evaluator.
func (s *Service) Model(name, version string) (*registry.Model, *forest.Model, error) {
	m, err := s.Registry.Get(name, version)
	if err != nil {
		return nil, nil, err
	}
	f, err := m.Forest()
	if err != nil {
		return m, nil, err
	}
	return m, f, nil
}

// Infer evaluates req on f.
func (s *Service) Infer(f *forest.Model, req *infer.Request) ([]infer.Output, error) {
	if s.MaxRows > 0 && req.NRows > s.MaxRows {
		return nil, infer.MaxRowsError(req.NRows, s.MaxRows)
	}
	return infer.Run(f, s.predictor(f), req)
}

// predictor returns f's evaluator: f itself, observed, or a batcher in front of it. A reloaded
// model is a new *forest.Model and so gets a predictor of its own.
func (s *Service) predictor(f *forest.Model) infer.Predictor {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.predictors[f]; ok {
		return p
	}
	if s.predictors == nil {
		s.predictors = map[*forest.Model]infer.Predictor{}
	}
	var p infer.Predictor = observed{f, s.Metrics}
	if s.Batching.MaxBatchRows > 0 {
		p = batcher.New(p, s.Batching)
	}
	s.predictors[f] = p
	return p
}

type observed struct {
	p infer.Predictor
	m *metrics.Metrics
}

func (o observed) Predict(dst, rows []float32, n int, kind forest.OutputKind) ([]float32, error) {
	if o.m != nil {
		o.m.ObserveBatch(n)
	}
	return o.p.Predict(dst, rows, n, kind)
}
