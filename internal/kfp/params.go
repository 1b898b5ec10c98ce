package kfp

import (
	"errors"
	"fmt"
)

// Params reads a component's input parameters from its ExecutorInput. It holds the component's
// code and its component.yaml to one list of inputs, both ways: an ExecutorInput parameter the
// component does not declare is an error, and so is code reading an input it does not declare.
// Every error is kept, so one run names every bad input at once (Err).
type Params struct {
	e     *Executor
	known map[string]bool
	errs  []error
}

// Params starts reading the executor's parameters as inputs declares them.
func (e *Executor) Params(inputs []Input) *Params {
	p := &Params{e: e, known: map[string]bool{}}
	for _, in := range inputs {
		p.known[in.Name] = true
	}
	for _, name := range e.ParameterNames() {
		if !p.known[name] {
			p.errs = append(p.errs, fmt.Errorf("unknown input parameter %q (the component's inputs are in component.yaml)", name))
		}
	}
	return p
}

func (p *Params) declared(name string) string {
	if !p.known[name] {
		p.errs = append(p.errs, fmt.Errorf("reads input %q, which component.yaml does not declare", name))
	}
	return name
}

// String is the input's value, def when it is absent.
func (p *Params) String(name, def string) string {
	v, err := p.e.String(p.declared(name), def)
	p.errs = append(p.errs, err)
	return v
}

// NonEmpty is String, with def also for an empty value.
func (p *Params) NonEmpty(name, def string) string {
	if v := p.String(name, def); v != "" {
		return v
	}
	return def
}

// Int is the input's integer value, def when it is absent.
func (p *Params) Int(name string, def int64) int64 {
	v, err := p.e.Int(p.declared(name), def)
	p.errs = append(p.errs, err)
	return v
}

// IntIn is the input's integer value within [lo, hi], def when it is absent (Executor.IntIn).
func (p *Params) IntIn(name string, def, lo, hi int64) int64 {
	v, err := p.e.IntIn(p.declared(name), def, lo, hi)
	p.errs = append(p.errs, err)
	return v
}

// Float is the input's number value, def when it is absent.
func (p *Params) Float(name string, def float64) float64 {
	v, err := p.e.Float(p.declared(name), def)
	p.errs = append(p.errs, err)
	return v
}

// Err joins every error met so far; nil when all inputs were fine.
func (p *Params) Err() error { return errors.Join(p.errs...) }
