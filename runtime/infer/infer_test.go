package infer

import (
	"context"
	"strings"
	"testing"

	v2 "github.com/gangboost/gangboost/runtime/v2"
)

// A request whose client went away before its outputs were evaluated is answered as stopped
// without the memory of a large output: 2^17 rows of SHAP values (2 MB of rows, 7.5 MB of
// answer) allocate less than a megabyte. A small output goes to the evaluator, which looks at
// the context itself.
func TestStoppedRequestTakesNoLargeOutput(t *testing.T) {
	m := irisModel(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		rows, width int
		output      string
	}{{1 << 17, 15, "contribs"}, {4, 15, "contribs"}, {1 << 17, 3, "predict_proba"}} {
		req, err := Decode(m, nil, &Call{
			Inputs:  []Input{{Name: "x", Datatype: "FP32", Shape: []int64{int64(c.rows), 4}, Data: v2.BinaryData(make([]byte, 16*c.rows))}},
			Outputs: []OutputRequest{{Name: c.output}},
		}, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		var out []Output
		n := allocated(func() { out, err = RunInto(ctx, m, m, req, nil) })
		if v2.KindOf(err) != v2.KindTimeout || !strings.Contains(err.Error(), "evaluation stopped") || out != nil {
			t.Fatalf("%d rows of %s: %v, %d outputs; want evaluation stopped", c.rows, c.output, err, len(out))
		}
		if c.rows*c.width > largeOutput && n > 1<<20 {
			t.Fatalf("%d rows of %s: a stopped request allocated %d bytes", c.rows, c.output, n)
		}
	}
}
