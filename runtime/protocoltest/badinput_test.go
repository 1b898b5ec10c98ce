package protocoltest

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"
	"testing"
)

func f32bytes(vals ...float32) []byte {
	var b []byte
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// binaryBody builds a binary-extension body: JSON header then blob; it returns the body and the
// header length to send.
func binaryBody(header string, blob []byte) ([]byte, string) {
	return append([]byte(header), blob...), strconv.Itoa(len(header))
}

func TestBadInputs(t *testing.T) {
	s := startIris(t, "--max_body_bytes", "4096", "--max_batch_rows", "50")
	infer := "/v2/models/iris/infer"
	in := func(shape, datatype, data string) string {
		return `{"inputs":[{"name":"input-0","shape":` + shape + `,"datatype":"` + datatype + `","data":` + data + `}]}`
	}
	goodRow := "[5.1,3.5,1.4,0.2]"
	binHdr := `{"inputs":[{"name":"input-0","shape":[1,4],"datatype":"FP32","parameters":{"binary_data_size":16}}]}`
	binBody, binLen := binaryBody(binHdr, f32bytes(5.1, 3.5, 1.4, 0.2))
	shortBody, _ := binaryBody(binHdr, f32bytes(5.1, 3.5, 1.4))

	cases := []struct {
		name    string
		method  string
		path    string
		body    string
		headers []string
		status  int
		want    string
	}{
		{"malformed JSON", "POST", infer, `{"inputs": [`, nil, 400, "malformed request body"},
		{"not an object", "POST", infer, `[1,2,3]`, nil, 400, "malformed request body"},
		{"empty body", "POST", infer, ``, nil, 400, "malformed request body"},
		{"trailing garbage", "POST", infer, in("[1,4]", "FP32", goodRow) + `xx`, nil, 400, "trailing data"},
		{"inputs not a list", "POST", infer, `{"inputs": {"a": 1}}`, nil, 400, "field inputs"},
		{"no inputs", "POST", infer, `{"inputs": []}`, nil, 400, "request has no inputs; want one input of shape [N, 4]"},
		{"missing inputs field", "POST", infer, `{"id": "x"}`, nil, 400, "request has no inputs"},
		{"two inputs", "POST", infer, `{"inputs":[{"name":"a","shape":[1,4],"datatype":"FP32","data":` + goodRow + `},{"name":"b","shape":[1,4],"datatype":"FP32","data":` + goodRow + `}]}`, nil, 400, "request has 2 inputs"},
		{"no datatype", "POST", infer, `{"inputs":[{"name":"input-0","shape":[1,4],"data":` + goodRow + `}]}`, nil, 400, "input input-0: no datatype"},
		{"no shape", "POST", infer, `{"inputs":[{"name":"input-0","datatype":"FP32","data":` + goodRow + `}]}`, nil, 400, "input input-0: no shape"},
		{"shape not ints", "POST", infer, in(`["a",4]`, "FP32", goodRow), nil, 400, "field inputs.shape"},
		{"negative dimension", "POST", infer, in("[-1,4]", "FP32", goodRow), nil, 400, "negative dimension"},
		{"too few features", "POST", infer, in("[1,3]", "FP32", "[1,2,3]"), nil, 400, "has 3 features per row; the model expects 4"},
		{"too many features", "POST", infer, in("[1,5]", "FP32", "[1,2,3,4,5]"), nil, 400, "has 5 features per row; the model expects 4"},
		{"3-d shape", "POST", infer, in("[1,2,2]", "FP32", goodRow), nil, 400, "the model expects [N, 4]"},
		{"data shorter than shape", "POST", infer, in("[2,4]", "FP32", goodRow), nil, 400, "shape declares 8 elements, data holds 4"},
		{"data longer than shape", "POST", infer, in("[1,4]", "FP32", "[1,2,3,4,5,6,7,8]"), nil, 400, "more than the 4 elements"},
		{"no data", "POST", infer, `{"inputs":[{"name":"input-0","shape":[1,4],"datatype":"FP32"}]}`, nil, 400, "input input-0: no data"},
		{"string element", "POST", infer, in("[1,4]", "FP32", `[1,"a",3,4]`), nil, 400, "element 1 is a string"},
		{"garbage element", "POST", infer, in("[1,4]", "FP32", `[1,2,3,x]`), nil, 400, "malformed request body"},
		{"object element", "POST", infer, in("[1,4]", "FP32", `[1,2,3,{"a":1}]`), nil, 400, "not a number"},
		{"unknown datatype", "POST", infer, in("[1,4]", "FP8", goodRow), nil, 400, `datatype "FP8" is not supported`},
		{"BYTES datatype", "POST", infer, in("[1,4]", "BYTES", `["a","b","c","d"]`), nil, 400, "datatype BYTES is not supported"},
		{"FP16 as JSON", "POST", infer, in("[1,4]", "FP16", goodRow), nil, 400, `datatype "FP16" is not supported as JSON`},
		{"fraction in INT32", "POST", infer, in("[1,4]", "INT32", "[1,2.5,3,4]"), nil, 400, "element 1 is 2.5, not a INT32 value"},
		{"overflow INT8", "POST", infer, in("[1,4]", "INT8", "[1,300,3,4]"), nil, 400, "element 1 is 300, not a INT8 value"},
		{"negative UINT8", "POST", infer, in("[1,4]", "UINT8", "[1,-2,3,4]"), nil, 400, "element 1 is -2, not a UINT8 value"},
		{"number in BOOL", "POST", infer, in("[1,4]", "BOOL", "[true,2,false,true]"), nil, 400, "datatype BOOL wants true or false"},
		{"unknown output", "POST", infer, `{"inputs":[{"name":"input-0","shape":[1,4],"datatype":"FP32","data":` + goodRow + `}],"outputs":[{"name":"probs"}]}`, nil, 400, `output "probs": unknown; this model has output-0`},
		{"binary size mismatch", "POST", infer, string(shortBody), []string{"Inference-Header-Content-Length", binLen}, 400, "binary_data_size is 16 but 12 bytes follow"},
		{"binary truncated element", "POST", infer, string(binBody[:len(binBody)-2]), []string{"Inference-Header-Content-Length", binLen}, 400, "binary_data_size is 16 but 14 bytes follow"},
		{"header length beyond body", "POST", infer, string(binBody), []string{"Inference-Header-Content-Length", "9999"}, 400, "Inference-Header-Content-Length is 9999 but the body has only"},
		{"header length not a number", "POST", infer, string(binBody), []string{"Inference-Header-Content-Length", "abc"}, 400, `"abc" is not a byte count`},
		{"header length cuts JSON", "POST", infer, string(binBody), []string{"Inference-Header-Content-Length", "10"}, 400, "malformed request body"},
		{"blob without header length", "POST", infer, string(binBody), nil, 400, "malformed request body"},
		{"binary size with wrong datatype size", "POST", infer, strings.Replace(string(binBody), `"FP32"`, `"FP64"`, 1), []string{"Inference-Header-Content-Length", binLen}, 400, "binary data is 16 bytes; shape and datatype FP64 need 4 elements x 8 bytes = 32"},
		{"binary and data both", "POST", infer, `{"inputs":[{"name":"input-0","shape":[1,4],"datatype":"FP32","data":` + goodRow + `,"parameters":{"binary_data_size":0}}]}`, nil, 400, "both data and binary_data_size given"},
		{"binary size not int", "POST", infer, `{"inputs":[{"name":"input-0","shape":[1,4],"datatype":"FP32","parameters":{"binary_data_size":"x"}}]}`, nil, 400, "parameter binary_data_size: want an integer"},
		{"unknown model", "POST", "/v2/models/nope/infer", in("[1,4]", "FP32", goodRow), nil, 404, "model nope not found; this server has [iris]"},
		{"unknown model metadata", "GET", "/v2/models/nope", "", nil, 404, "model nope not found"},
		{"unknown model ready", "GET", "/v2/models/nope/ready", "", nil, 404, "model nope not found"},
		{"version mismatch", "POST", "/v2/models/iris/versions/7/infer", in("[1,4]", "FP32", goodRow), nil, 404, "model iris version 7 not found; available version: 1"},
		{"version mismatch metadata", "GET", "/v2/models/iris/versions/2", "", nil, 404, "version 2 not found"},
		{"load unknown model", "POST", "/v2/repository/models/nope/load", "", nil, 404, "model nope not found"},
		{"unknown route", "GET", "/v2/nothing/here", "", nil, 404, "no route GET /v2/nothing/here"},
		{"wrong method", "GET", infer, "", nil, 405, "method GET not allowed"},
		{"oversize body", "POST", infer, `{"inputs":[{"name":"input-0","shape":[1,4],"datatype":"FP32","data":[` + strings.Repeat("1.0,", 2000) + `1]}]}`, nil, 413, "at most 4096"},
		{"too many rows", "POST", infer, in("[60,4]", "FP32", "["+strings.TrimSuffix(strings.Repeat("1,2,3,4,", 60), ",")+"]"), nil, 413, "request has 60 rows; this server accepts at most 50"},
		{"v1 no instances", "POST", "/v1/models/iris:predict", `{"rows":[[1,2,3,4]]}`, nil, 400, `request has no "instances"`},
		{"v1 ragged instance", "POST", "/v1/models/iris:predict", `{"instances":[[1,2,3]]}`, nil, 400, "row 0 has 3 elements; shape [1 4] wants 4"},
		{"v1 unknown model", "POST", "/v1/models/nope:predict", `{"instances":[[1,2,3,4]]}`, nil, 404, "model nope not found"},
		{"v1 explain", "POST", "/v1/models/iris:explain", `{"instances":[[1,2,3,4]]}`, nil, 501, "V1 :explain is not implemented"},
		{"v1 malformed", "POST", "/v1/models/iris:predict", `{"instances":`, nil, 400, "malformed request body"},
	}
	if len(cases) < 40 {
		t.Fatalf("the suite must hold at least 40 cases, has %d", len(cases))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, hdr, body := call(t, c.method, s.URL+c.path, []byte(c.body), c.headers...)
			if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Fatalf("error content type %q, want application/json", ct)
			}
			m := decode(t, body)
			msg, _ := m["error"].(string)
			if len(m) != 1 || msg == "" {
				t.Fatalf("error body %s: want exactly {\"error\": \"...\"}", body)
			}
			if status != c.status || !strings.Contains(msg, c.want) {
				t.Fatalf("status %d error %q\nwant %d with %q", status, msg, c.status, c.want)
			}
		})
	}
	// After all of that the server still answers.
	if status, _, _ := call(t, "POST", s.URL+infer, []byte(in("[1,4]", "FP32", goodRow))); status != 200 {
		t.Fatalf("server no longer serves after bad inputs: %d", status)
	}
}

// NaN and infinities are values XGBoost handles (NaN = missing), so they are accepted.
func TestNonFiniteInputsAreMissingValues(t *testing.T) {
	s := startIris(t)
	body := `{"inputs":[{"name":"input-0","shape":[3,4],"datatype":"FP32","data":[NaN,3.5,1.4,0.2,null,null,null,null,Infinity,-Infinity,1,1]}]}`
	status, _, b := call(t, "POST", s.URL+"/v2/models/iris/infer", []byte(body))
	if status != 200 {
		t.Fatalf("status %d: %s", status, b)
	}
	m := decode(t, b)
	data := m["outputs"].([]any)[0].(map[string]any)["data"].([]any)
	if len(data) != 9 {
		t.Fatalf("want 3x3 probabilities, got %v", data)
	}
}
