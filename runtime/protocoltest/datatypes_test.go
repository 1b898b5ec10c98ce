package protocoltest

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/gangboost/gangboost/runtime/forest"
)

// irisRows are two iris rows whose features are whole numbers, so every datatype can hold them.
var irisRows = []float32{5, 3, 1, 0, 7, 3, 5, 2}

func expectedProba(t *testing.T, rows []float32) []float32 {
	t.Helper()
	m, err := forest.Load(filepath.Join(modelsDir(), "iris", "model.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Predict(nil, rows, len(rows)/4, forest.OutputDefault)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func encodeAs(datatype string, vals []float32) []byte {
	var b []byte
	le := binary.LittleEndian
	for _, v := range vals {
		switch datatype {
		case "FP32":
			b = le.AppendUint32(b, math.Float32bits(v))
		case "FP64":
			b = le.AppendUint64(b, math.Float64bits(float64(v)))
		case "FP16":
			b = le.AppendUint16(b, floatToHalf(v))
		case "INT8", "UINT8", "BOOL":
			b = append(b, byte(int8(v)))
		case "INT16", "UINT16":
			b = le.AppendUint16(b, uint16(int16(v)))
		case "INT32", "UINT32":
			b = le.AppendUint32(b, uint32(int32(v)))
		case "INT64", "UINT64":
			b = le.AppendUint64(b, uint64(int64(v)))
		}
	}
	return b
}

// floatToHalf converts small whole numbers exactly (enough for the test rows).
func floatToHalf(f float32) uint16 {
	if f == 0 {
		return 0
	}
	bits := math.Float32bits(f)
	sign := uint16(bits>>16) & 0x8000
	exp := int((bits>>23)&0xff) - 127 + 15
	frac := uint16((bits >> 13) & 0x3ff)
	return sign | uint16(exp)<<10 | frac
}

func jsonData(datatype string, vals []float32) string {
	b := []byte{'['}
	for i, v := range vals {
		if i > 0 {
			b = append(b, ',')
		}
		if datatype == "BOOL" {
			b = strconv.AppendBool(b, v != 0)
		} else {
			b = strconv.AppendFloat(b, float64(v), 'g', -1, 32)
		}
	}
	return string(append(b, ']'))
}

func outputData(t *testing.T, body []byte) []float32 {
	t.Helper()
	var resp struct {
		Outputs []struct {
			Data []float32 `json:"data"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(body, &resp); err != nil || len(resp.Outputs) == 0 {
		t.Fatalf("bad response %s: %v", body, err)
	}
	return resp.Outputs[0].Data
}

func TestEveryDatatypeJSONAndBinary(t *testing.T) {
	s := startIris(t)
	want := expectedProba(t, irisRows)
	boolRows := []float32{1, 0, 1, 0, 0, 1, 1, 1}
	for _, dt := range []string{"FP16", "FP32", "FP64", "INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32", "UINT64", "BOOL"} {
		rows := irisRows
		exp := want
		if dt == "BOOL" {
			rows, exp = boolRows, expectedProba(t, boolRows)
		}
		if dt != "FP16" {
			body := `{"inputs":[{"name":"input-0","shape":[2,4],"datatype":"` + dt + `","data":` + jsonData(dt, rows) + `}]}`
			status, _, b := call(t, "POST", s.URL+"/v2/models/iris/infer", []byte(body))
			if status != 200 {
				t.Fatalf("%s JSON: status %d %s", dt, status, b)
			}
			assertClose(t, dt+" JSON", outputData(t, b), exp)
		}
		blob := encodeAs(dt, rows)
		hdr := `{"inputs":[{"name":"input-0","shape":[2,4],"datatype":"` + dt + `","parameters":{"binary_data_size":` + strconv.Itoa(len(blob)) + `}}]}`
		status, _, b := call(t, "POST", s.URL+"/v2/models/iris/infer", append([]byte(hdr), blob...),
			"Inference-Header-Content-Length", strconv.Itoa(len(hdr)), "Content-Type", "application/octet-stream")
		if status != 200 {
			t.Fatalf("%s binary: status %d %s", dt, status, b)
		}
		assertClose(t, dt+" binary", outputData(t, b), exp)
	}
}

func TestNestedAndFlatDataAgree(t *testing.T) {
	s := startIris(t)
	flat := `{"inputs":[{"name":"input-0","shape":[2,4],"datatype":"FP32","data":[5,3,1,0,7,3,5,2]}]}`
	nested := `{"inputs":[{"name":"input-0","shape":[2,4],"datatype":"FP32","data":[[5,3,1,0],[7,3,5,2]]}]}`
	_, _, a := call(t, "POST", s.URL+"/v2/models/iris/infer", []byte(flat))
	_, _, b := call(t, "POST", s.URL+"/v2/models/iris/infer", []byte(nested))
	assertClose(t, "nested", outputData(t, b), outputData(t, a))
}

func TestBinaryOutput(t *testing.T) {
	s := startIris(t)
	body := `{"inputs":[{"name":"input-0","shape":[2,4],"datatype":"FP32","data":[5,3,1,0,7,3,5,2]}],` +
		`"outputs":[{"name":"output-0","parameters":{"binary_data":true}},{"name":"predict"}]}`
	status, hdr, b := call(t, "POST", s.URL+"/v2/models/iris/infer", []byte(body))
	if status != 200 {
		t.Fatalf("status %d %s", status, b)
	}
	n, err := strconv.Atoi(hdr.Get("Inference-Header-Content-Length"))
	if err != nil || n <= 0 || n > len(b) {
		t.Fatalf("Inference-Header-Content-Length %q for a %d-byte body", hdr.Get("Inference-Header-Content-Length"), len(b))
	}
	var head struct {
		Outputs []struct {
			Name       string         `json:"name"`
			Parameters map[string]int `json:"parameters"`
			Data       []int64        `json:"data"`
		} `json:"outputs"`
	}
	if err := json.Unmarshal(b[:n], &head); err != nil {
		t.Fatal(err)
	}
	if head.Outputs[0].Parameters["binary_data_size"] != 24 || len(b)-n != 24 {
		t.Fatalf("binary output: size param %v, %d bytes follow; want 24", head.Outputs[0].Parameters, len(b)-n)
	}
	got := make([]float32, 6)
	for i := range got {
		got[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[n+4*i:]))
	}
	assertClose(t, "binary output", got, expectedProba(t, irisRows))
	if len(head.Outputs[1].Data) != 2 {
		t.Fatalf("JSON output beside a binary one: %+v", head.Outputs[1])
	}
	// binary_data_output on the request makes every output binary.
	body = `{"inputs":[{"name":"input-0","shape":[2,4],"datatype":"FP32","data":[5,3,1,0,7,3,5,2]}],"parameters":{"binary_data_output":true}}`
	_, hdr, b = call(t, "POST", s.URL+"/v2/models/iris/infer", []byte(body))
	if n, _ := strconv.Atoi(hdr.Get("Inference-Header-Content-Length")); len(b)-n != 24 {
		t.Fatalf("binary_data_output: %d bytes after the header, want 24", len(b)-n)
	}
}

func assertClose(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-6 {
			t.Fatalf("%s: value %d is %v, want %v", what, i, got[i], want[i])
		}
	}
}
