package rest

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/gangboost/gangboost/runtime/infer"
	v2 "github.com/gangboost/gangboost/runtime/v2"
)

// The V1 protocol (KServe's original data plane): {"instances": [[...], ...]} in,
// {"predictions": [...]} out, with what Booster.predict returns.

func (h *handlers) v1List(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string][]string{"models": h.svc.Registry.Names()})
}

func (h *handlers) v1Model(c echo.Context) error {
	m, err := h.svc.Registry.Get(c.Param("model"), "")
	if err != nil {
		return err
	}
	ready, _ := m.Ready()
	return c.JSON(http.StatusOK, map[string]any{"name": m.Name, "ready": ready})
}

func (h *handlers) v1Verb(c echo.Context) error {
	name, verb, _ := strings.Cut(c.Param("model"), ":")
	switch verb {
	case "predict":
	case "explain":
		return v2.Errorf(v2.KindNotImplemented, "V1 :explain is not implemented; ask the V2 endpoint for the %q output (SHAP values)", infer.OutputContribs)
	default:
		return v2.Errorf(v2.KindModelNotFound, "no route POST %s: want /v1/models/{model}:predict", c.Request().URL.Path)
	}
	_, f, err := h.svc.Model(name, "")
	if err != nil {
		return err
	}
	body, err := h.readBody(c)
	if err != nil {
		return err
	}
	var req struct {
		Instances json.RawMessage `json:"instances"`
	}
	if err := json.Unmarshal(v2.SanitizeNonFinite(body), &req); err != nil {
		return v2.Errorf(v2.KindInvalidInput, "malformed request body: %v", v2.DescribeJSONError(err))
	}
	if len(req.Instances) == 0 {
		return v2.Errorf(v2.KindInvalidInput, `request has no "instances"; want {"instances": [[f1, f2, ...], ...]}`)
	}
	var rows [][]json.RawMessage
	if err := json.Unmarshal(req.Instances, &rows); err != nil {
		return v2.Errorf(v2.KindInvalidInput, `"instances" must be a list of rows of %d numbers: %v`, f.NumFeatures(), v2.DescribeJSONError(err))
	}
	r := &infer.Request{NRows: len(rows), Rows: make([]float32, 0, len(rows)*f.NumFeatures())}
	for i, row := range rows {
		if len(row) != f.NumFeatures() {
			return v2.Errorf(v2.KindInvalidInput, "instance %d has %d features; the model expects %d", i, len(row), f.NumFeatures())
		}
		raw, _ := json.Marshal(row)
		if r.Rows, err = v2.DecodeJSONData(r.Rows, "instances", "FP64", raw, f.NumFeatures()); err != nil {
			return err
		}
	}
	outs, err := h.svc.Infer(f, r)
	if err != nil {
		return err
	}
	// predictions: a flat list for one value per instance, else a list per instance. Non-finite
	// values are written as null, as in V2 responses.
	o := outs[0]
	b := append(make([]byte, 0, 32+12*len(o.Values)), `{"predictions":`...)
	if len(o.Shape) == 1 {
		b = appendData(b, o)
	} else {
		w := len(o.Values) / max(len(rows), 1)
		b = append(b, '[')
		for i := range rows {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendData(b, infer.Output{Datatype: o.Datatype, Values: o.Values[i*w : (i+1)*w]})
		}
		b = append(b, ']')
	}
	return c.JSONBlob(http.StatusOK, append(b, '}'))
}
