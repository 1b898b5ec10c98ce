package infer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gangboost/gangboost/runtime/forest"
	v2 "github.com/gangboost/gangboost/runtime/v2"
)

// Limits bound what one request may cost. Decode checks them against the declared shape and
// the size of the data that actually arrived before it allocates anything sized by either, so
// a 96-byte request declaring half a billion rows gets its 413 without memory being touched.
type Limits struct {
	MaxRows           int // rows per request (--max_batch_rows); 0: no limit
	MaxResponseValues int // rows x values summed over the requested outputs (--max_response_values); 0: no limit
	MaxContribsRows   int // rows of a request that asks for SHAP values (--max_contribs_rows); 0: no limit
}

// Input is one input tensor as a protocol delivered it, its elements not yet read.
type Input struct {
	Name     string
	Datatype string
	Shape    []int64
	Data     Elements // nil: the request carried no data for this input
}

// Elements are a tensor's elements in their wire form: JSON (v2.JSONData), little-endian
// bytes (v2.BinaryData, also gRPC's raw contents) or gRPC's typed contents.
type Elements interface {
	// Check tells, from the wire form's size alone, whether it can hold want elements of
	// datatype, so a shape that promises more than arrived is refused before rows are allocated.
	Check(name, datatype string, want int) error
	// Append decodes exactly want elements into dst as float32 (NaN: missing).
	Append(dst []float32, name, datatype string, shape []int64, want int) ([]float32, error)
}

// Call is an inference request as REST (V2 or V1) or gRPC delivered it.
type Call struct {
	ID      string
	Inputs  []Input
	Outputs []OutputRequest // empty: output-0
	// Columns says the inputs are the columns of a table, one per feature, as KServe's client
	// sends a pandas DataFrame (parameters.content_type "pd"). Several inputs mean columns too.
	Columns bool
}

// ContentTypeColumns is the request parameter content_type KServe's client sets for a pandas
// DataFrame sent as one input per column.
const ContentTypeColumns = "pd"

// Decode checks c against model f and the limits and reads its inputs into rows. featureNames
// are the model's column names (nil: unknown), used to match columns by name. It is the one
// decoding path of every protocol, so a limit or a check lands once.
func Decode(f *forest.Model, featureNames []string, c *Call, lim Limits) (*Request, error) {
	req := new(Request)
	if err := DecodeInto(req, f, featureNames, c, lim); err != nil {
		return nil, err
	}
	return req, nil
}

// DecodeInto is Decode into req, reusing its rows and outputs' memory (Work does).
func DecodeInto(req *Request, f *forest.Model, featureNames []string, c *Call, lim Limits) error {
	outs, err := resolveOutputs(req.Outputs[:0], f, c.Outputs)
	req.ID, req.NRows, req.Outputs = c.ID, 0, outs
	if err != nil {
		return err
	}
	if len(c.Inputs) == 0 {
		return v2.Errorf(v2.KindInvalidInput, "request has no inputs; want one input of shape [N, %d]", f.NumFeatures())
	}
	for i := range c.Inputs {
		in := &c.Inputs[i]
		if in.Name == "" {
			in.Name = fmt.Sprintf("(input %d)", i)
		}
		if in.Datatype == "" {
			return v2.Errorf(v2.KindInvalidInput, "input %s: no datatype", in.Name)
		}
		if in.Shape == nil {
			return v2.Errorf(v2.KindInvalidInput, "input %s: no shape", in.Name)
		}
		if in.Data == nil {
			return v2.Errorf(v2.KindInvalidInput, "input %s: no data (give \"data\", or binary data with the %s parameter)", in.Name, v2.ParamBinaryDataSize)
		}
		if _, err := v2.ElementCount(in.Name, in.Shape); err != nil {
			return err
		}
	}
	var nrows int
	var columns []int // columns[i]: the feature input i fills; nil: one input holds whole rows
	if len(c.Inputs) == 1 && !c.Columns {
		if nrows, err = FeatureShape(f, c.Inputs[0].Name, c.Inputs[0].Shape); err != nil {
			return err
		}
	} else {
		if nrows, columns, err = matchColumns(f, featureNames, c.Inputs); err != nil {
			return err
		}
	}
	if err := checkLimits(f, nrows, outs, lim); err != nil {
		return err
	}
	// Each input must be able to hold what its shape declares before rows are allocated.
	for _, in := range c.Inputs {
		want, _ := v2.ElementCount(in.Name, in.Shape)
		if err := in.Data.Check(in.Name, in.Datatype, want); err != nil {
			return err
		}
	}
	req.NRows = nrows
	nf := f.NumFeatures()
	if columns == nil {
		in := &c.Inputs[0]
		req.Rows, err = in.Data.Append(slices.Grow(req.Rows[:0], nrows*nf), in.Name, in.Datatype, in.Shape, nrows*nf)
		return err
	}
	req.Rows = slices.Grow(req.Rows[:0], nrows*nf)[:nrows*nf]
	col := make([]float32, 0, nrows)
	for i, in := range c.Inputs {
		if col, err = in.Data.Append(col[:0], in.Name, in.Datatype, in.Shape, nrows); err != nil {
			return err
		}
		j := columns[i]
		for r, v := range col {
			req.Rows[r*nf+j] = v
		}
	}
	return nil
}

// resolveOutputs names the outputs to compute: each known to the model, none twice.
// They are appended to outs, whose memory they reuse.
func resolveOutputs(outs []Output, f *forest.Model, asked []OutputRequest) ([]Output, error) {
	if len(asked) == 0 {
		asked = defaultOutput[:]
	}
	for i, o := range asked {
		kind, ok := outputKind(o.Name)
		if !ok {
			return nil, v2.Errorf(v2.KindInvalidInput, "output %q: unknown; this model has %s", o.Name, strings.Join(OutputNames(f), ", "))
		}
		for _, prev := range asked[:i] {
			if prev.Name == o.Name {
				return nil, v2.Errorf(v2.KindInvalidInput, "output %q is requested twice; ask for each output once", o.Name)
			}
		}
		width, err := f.Width(kind)
		if err != nil {
			return nil, v2.Errorf(v2.KindInvalidInput, "output %q: %v", o.Name, err)
		}
		outs = append(outs, Output{Name: o.Name, Binary: o.Binary, kind: kind, width: width})
	}
	return outs, nil
}

// outputKind is outputKinds[name]; output-0, nearly every request's, is known without the
// map's hash.
func outputKind(name string) (forest.OutputKind, bool) {
	if name == OutputDefault {
		return forest.OutputDefault, true
	}
	kind, ok := outputKinds[name]
	return kind, ok
}

// defaultOutput is what a request that names no output gets.
var defaultOutput = [1]OutputRequest{{Name: OutputDefault}}

// checkLimits bounds the request's rows and the size of its answer.
func checkLimits(f *forest.Model, nrows int, outs []Output, lim Limits) error {
	if lim.MaxRows > 0 && nrows > lim.MaxRows {
		return MaxRowsError(nrows, lim.MaxRows)
	}
	values := int64(0)
	for _, o := range outs {
		if o.kind == forest.OutputContribs && lim.MaxContribsRows > 0 && nrows > lim.MaxContribsRows {
			return v2.Errorf(v2.KindTooLarge, "output %q: request has %d rows; SHAP values are computed for at most %d rows per request (--max_contribs_rows)", o.Name, nrows, lim.MaxContribsRows)
		}
		values += int64(nrows) * int64(o.width)
	}
	if lim.MaxResponseValues > 0 && values > int64(lim.MaxResponseValues) {
		return v2.Errorf(v2.KindTooLarge, "the answer would hold %d values (%d rows x %d values per row over %d outputs); this server returns at most %d per request (--max_response_values)",
			values, nrows, values/max(int64(nrows), 1), len(outs), lim.MaxResponseValues)
	}
	return nil
}

// matchColumns maps column inputs (each of shape [N] or [N, 1]) to the model's features: by
// name when the model has feature names, else in order.
func matchColumns(f *forest.Model, names []string, ins []Input) (int, []int, error) {
	nf := f.NumFeatures()
	nrows := -1
	for _, in := range ins {
		n, ok := columnRows(in.Shape)
		if !ok {
			return 0, nil, v2.Errorf(v2.KindInvalidInput, "request has %d inputs and input %s has shape %v: the model takes one input of shape [N, %d], or one input per feature column (%d), each of shape [N]", len(ins), in.Name, in.Shape, nf, nf)
		}
		if nrows >= 0 && n != nrows {
			return 0, nil, v2.Errorf(v2.KindInvalidInput, "input %s: column has %d rows, input %s has %d", in.Name, n, ins[0].Name, nrows)
		}
		nrows = n
	}
	cols := make([]int, len(ins))
	if len(names) != nf {
		if len(ins) != nf {
			return 0, nil, v2.Errorf(v2.KindInvalidInput, "request has %d column inputs; the model takes %d features (one input of shape [N, %d], or one column per feature)", len(ins), nf, nf)
		}
		for i := range cols {
			cols[i] = i
		}
		return nrows, cols, nil
	}
	index := make(map[string]int, nf)
	for j, n := range names {
		index[n] = j
	}
	seen := make([]bool, nf)
	for i, in := range ins {
		j, ok := index[in.Name]
		if !ok {
			return 0, nil, v2.Errorf(v2.KindInvalidInput, "input %s: the model has no feature of that name; its features are %s", in.Name, strings.Join(names, ", "))
		}
		if seen[j] {
			return 0, nil, v2.Errorf(v2.KindInvalidInput, "input %s: column given twice", in.Name)
		}
		seen[j], cols[i] = true, j
	}
	var missing []string
	for j, ok := range seen {
		if !ok {
			missing = append(missing, names[j])
		}
	}
	if len(missing) > 0 {
		return 0, nil, v2.Errorf(v2.KindInvalidInput, "request lacks the feature column(s) %s; the model's features are %s", strings.Join(missing, ", "), strings.Join(names, ", "))
	}
	return nrows, cols, nil
}

// columnRows reads the row count of a column's shape, [N] or [N, 1].
func columnRows(shape []int64) (int, bool) {
	switch {
	case len(shape) == 1 && shape[0] >= 0:
		return int(shape[0]), true
	case len(shape) == 2 && shape[1] == 1 && shape[0] >= 0:
		return int(shape[0]), true
	}
	return 0, false
}
