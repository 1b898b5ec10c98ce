package protocoltest

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/gangboost/gangboost/runtime/internal/npy"
)

// The model zoo (runtime/forest/testdata/zoo, see its README.md): 37 models saved by XGBoost
// 3.4.1 and 2.1.4, each as model.json and model.ubj, with XGBoost's own outputs for 300 test
// rows. runtime/forest holds the evaluator to them in process; here the gangboost-runtime binary
// serves each file as KServe starts it (--model_dir a folder holding the one file) and a V2 client
// asks for every output XGBoost gave, the rows sent as KServe's Python client sends them (the
// binary tensor extension, NaN for missing), the outputs returned as binary data. So what a user
// of the InferenceService gets is what XGBoost answers: the model file reader, the output
// selection, the shapes and the encoding included.

// Tolerance, as runtime/forest's zoo test explains: margins come out bit-identical,
// predictions within one rounding of expf, SHAP values within float32 cancellation; a wrong
// feature moves values by 1e-2 or more. Leaf ids must be exact.
const (
	zooRel = 1e-5
	zooAbs = 1e-6
)

// zooOutputs maps XGBoost's reference files to the runtime's output names.
var zooOutputs = []struct{ file, output string }{
	{"pred", "output-0"},
	{"margin", "margin"},
	{"leaf", "leaf"},
	{"contribs", "contribs"},
}

func TestZooServedByTheBinary(t *testing.T) {
	zoo := filepath.Join(root, "runtime", "forest", "testdata", "zoo")
	var dirs []string
	err := filepath.WalkDir(zoo, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "meta.json" {
			dirs = append(dirs, filepath.Dir(p))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) != 74 {
		t.Fatalf("found %d models under %s, want 37 per XGBoost version x 2 versions", len(dirs), zoo)
	}
	served, matched := 0, 0
	for _, dir := range dirs {
		name, _ := filepath.Rel(zoo, dir)
		var meta struct {
			Refused map[string]string `json:"refused"`
		}
		if b, err := os.ReadFile(filepath.Join(dir, "meta.json")); err != nil {
			t.Fatal(err)
		} else if err := json.Unmarshal(b, &meta); err != nil {
			t.Fatalf("%s/meta.json: %v", name, err)
		}
		x, err := npy.Read(filepath.Join(dir, "X.npy"))
		if err != nil {
			t.Fatal(err)
		}
		for _, format := range []string{"json", "ubj"} {
			t.Run(filepath.ToSlash(name)+"/"+format, func(t *testing.T) {
				s := start(t, "--model_name", "zoo", "--model_dir", filepath.Join(dir, format))
				if status, _, b := call(t, "GET", s.URL+"/v2/models/zoo/ready", nil); status != 200 {
					t.Fatalf("model not ready (status %d %s): every zoo model is served\n%s", status, b, s.log.String())
				}
				served++
				var outputs []string
				var refs []*npy.Array
				for _, o := range zooOutputs {
					ref, err := npy.Read(filepath.Join(dir, o.file+".npy"))
					if errors.Is(err, fs.ErrNotExist) {
						if _, ok := meta.Refused[o.file]; !ok {
							t.Fatalf("%s.npy missing, and meta.json does not say XGBoost refused it", o.file)
						}
						continue
					}
					if err != nil {
						t.Fatal(err)
					}
					outputs, refs = append(outputs, o.output), append(refs, ref)
				}
				got := zooInfer(t, s, x, outputs)
				for i, out := range outputs {
					if err := zooCompare(got[out], refs[i], out == "leaf"); err != nil {
						t.Errorf("%s: %v", out, err)
						continue
					}
					matched++
				}
			})
		}
	}
	t.Logf("%d model files served by gangboost-runtime, %d outputs as XGBoost gives them", served, matched)
}

// zooOutput is one output of an infer response: its shape, and its values read from the binary
// part.
type zooOutput struct {
	shape  []int
	values []float32
}

// zooInfer sends x as one FP32 binary input and asks for outputs, each as binary data.
func zooInfer(t *testing.T, s *server, x *npy.Array, outputs []string) map[string]zooOutput {
	t.Helper()
	blob := make([]byte, 0, 4*len(x.Data))
	for _, v := range x.Float32() {
		blob = binary.LittleEndian.AppendUint32(blob, math.Float32bits(v))
	}
	type output struct {
		Name       string         `json:"name"`
		Parameters map[string]any `json:"parameters"`
	}
	req := map[string]any{
		"inputs": []any{map[string]any{
			"name": "input-0", "datatype": "FP32", "shape": x.Shape,
			"parameters": map[string]any{"binary_data_size": len(blob)},
		}},
	}
	var want []output
	for _, o := range outputs {
		want = append(want, output{Name: o, Parameters: map[string]any{"binary_data": true}})
	}
	req["outputs"] = want
	head, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	status, hdr, b := call(t, "POST", s.URL+"/v2/models/zoo/infer", append(head, blob...),
		"Inference-Header-Content-Length", strconv.Itoa(len(head)), "Content-Type", "application/octet-stream")
	if status != 200 {
		t.Fatalf("infer %v: status %d %s", outputs, status, b)
	}
	n, err := strconv.Atoi(hdr.Get("Inference-Header-Content-Length"))
	if err != nil || n > len(b) {
		t.Fatalf("Inference-Header-Content-Length %q for a %d-byte answer", hdr.Get("Inference-Header-Content-Length"), len(b))
	}
	var resp struct {
		Outputs []struct {
			Name       string `json:"name"`
			Datatype   string `json:"datatype"`
			Shape      []int  `json:"shape"`
			Parameters struct {
				BinaryDataSize int `json:"binary_data_size"`
			} `json:"parameters"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(b[:n], &resp); err != nil {
		t.Fatalf("answer header: %v: %s", err, b[:n])
	}
	got := map[string]zooOutput{}
	off := n
	for _, o := range resp.Outputs {
		size := o.Parameters.BinaryDataSize
		if o.Datatype != "FP32" || size%4 != 0 || off+size > len(b) {
			t.Fatalf("output %s: datatype %s, %d binary bytes at %d of %d", o.Name, o.Datatype, size, off, len(b))
		}
		vals := make([]float32, size/4)
		for i := range vals {
			vals[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[off+4*i:]))
		}
		off += size
		got[o.Name] = zooOutput{shape: o.Shape, values: vals}
	}
	if off != len(b) {
		t.Fatalf("answer has %d bytes after its outputs", len(b)-off)
	}
	for _, o := range outputs {
		if _, ok := got[o]; !ok {
			t.Fatalf("answer lacks output %s", o)
		}
	}
	return got
}

// zooCompare checks an output against XGBoost's reference: the same shape, and the values
// exactly when exact is set, else within zooRel/zooAbs.
func zooCompare(got zooOutput, ref *npy.Array, exact bool) error {
	if fmt.Sprint(got.shape) != fmt.Sprint(ref.Shape) {
		return fmt.Errorf("shape %v, XGBoost gives %v", got.shape, ref.Shape)
	}
	return ref.Compare(got.values, exact, zooAbs, zooRel)
}
