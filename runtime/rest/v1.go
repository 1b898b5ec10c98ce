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
	_, l, err := h.svc.Acquire(name, "")
	if err != nil {
		return err
	}
	defer l.Release()
	body, reserved, err := h.readBody(c.Request(), nil)
	if err != nil {
		return err
	}
	defer h.budget.give(reserved)
	call, err := v1Call(body, l.Forest.NumFeatures())
	if err != nil {
		return err
	}
	outs, err := h.svc.Infer(c.Request().Context(), l, call, nil)
	if err != nil {
		return err
	}
	nrows := int(call.Inputs[0].Shape[0])
	// predictions: a flat list for one value per instance, else a list per instance. Non-finite
	// values are written as null, as in V2 responses.
	o := outs[0]
	b := append(make([]byte, 0, 32+12*len(o.Values)), `{"predictions":`...)
	if len(o.Shape) == 1 {
		b = appendData(b, o)
	} else {
		w := len(o.Values) / max(nrows, 1)
		b = append(b, '[')
		for i := range nrows {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendData(b, infer.Output{Datatype: o.Datatype, Values: o.Values[i*w : (i+1)*w]})
		}
		b = append(b, ']')
	}
	return c.JSONBlob(http.StatusOK, append(b, '}'))
}

// v1Call reads a V1 body, {"instances": [[f1, f2, ...], ...]} or the same rows under "inputs"
// (TensorFlow Serving's columnar key, which KServe's V1 server accepts too), as one input of
// shape [N, features] for the shared decoder.
func v1Call(body []byte, nf int) (*infer.Call, error) {
	var req struct {
		Instances json.RawMessage `json:"instances"`
		Inputs    json.RawMessage `json:"inputs"`
	}
	if err := json.Unmarshal(v2.SanitizeNonFinite(body), &req); err != nil {
		return nil, v2.Errorf(v2.KindInvalidInput, "malformed request body: %v", v2.DescribeJSONError(err))
	}
	key, raw := "instances", req.Instances
	if len(raw) == 0 {
		key, raw = "inputs", req.Inputs
	}
	if len(raw) == 0 {
		return nil, v2.Errorf(v2.KindInvalidInput, `request has no "instances" (or "inputs"); want {"instances": [[f1, f2, ...], ...]}`)
	}
	var rows []json.RawMessage
	if err := json.Unmarshal(raw, &rows); err != nil {
		return nil, v2.Errorf(v2.KindInvalidInput, `%q must be a list of rows of %d numbers: %v`, key, nf, v2.DescribeJSONError(err))
	}
	for i, row := range rows {
		if len(row) == 0 || row[0] != '[' {
			return nil, v2.Errorf(v2.KindInvalidInput, "%s[%d] is %.40s, not a list of %d features", key, i, row, nf)
		}
	}
	return &infer.Call{Inputs: []infer.Input{{
		Name: key, Datatype: "FP64", Shape: []int64{int64(len(rows)), int64(nf)}, Data: v2.JSONData(raw),
	}}}, nil
}
