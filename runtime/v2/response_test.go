package v2

import (
	"encoding/binary"
	"math"
	"strconv"
	"testing"
)

// TestDecodeInferResponse: JSON data (null as NaN), binary tensors after the JSON part in output
// order, and answers whose sizes do not add up.
func TestDecodeInferResponse(t *testing.T) {
	header := `{"model_name":"m","id":"1","outputs":[` +
		`{"name":"predict","shape":[2],"datatype":"INT64","parameters":{"binary_data_size":16}},` +
		`{"name":"predict_proba","shape":[2,2],"datatype":"FP32","data":[0.1,0.9,null,0.25]}]}`
	var blob []byte
	blob = binary.LittleEndian.AppendUint64(blob, 1)
	blob = binary.LittleEndian.AppendUint64(blob, 0)
	out, err := DecodeInferResponse(append([]byte(header), blob...), strconv.Itoa(len(header)))
	if err != nil {
		t.Fatal(err)
	}
	if p := out["predict"].Values; len(p) != 2 || p[0] != 1 || p[1] != 0 {
		t.Errorf("predict = %v", p)
	}
	pp := out["predict_proba"].Values
	if pp[0] != float64(float32(0.1)) || !math.IsNaN(pp[2]) || pp[3] != 0.25 {
		t.Errorf("predict_proba = %v", pp)
	}
	for name, c := range map[string]struct{ body, length string }{
		"length beyond the body": {header, "100000"},
		"binary part missing":    {header, strconv.Itoa(len(header))},
		"shape and data differ":  {`{"outputs":[{"name":"x","shape":[3],"datatype":"FP32","data":[1,2]}]}`, ""},
		"not JSON":               {`<html>`, ""},
		"nested data":            {`{"outputs":[{"name":"x","shape":[1,2],"datatype":"FP32","data":[[1,2]]}]}`, ""},
		"a string element":       {`{"outputs":[{"name":"x","shape":[1],"datatype":"FP32","data":["1"]}]}`, ""},
		"size not a number":      {`{"outputs":[{"name":"x","shape":[1],"datatype":"FP32","parameters":{"binary_data_size":"4"}}]}` + "\x00\x00\x00\x00", "94"},
	} {
		if _, err := DecodeInferResponse([]byte(c.body), c.length); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	numeric := `{"outputs":[{"name":"x","shape":[1],"datatype":"FP32","parameters":{"binary_data_size":4}}]}`
	if _, err := DecodeInferResponse([]byte(numeric+"\x00\x00\x00\x00"), strconv.Itoa(len(numeric))); err != nil {
		t.Errorf("binary_data_size as a number: %v", err)
	}
}

// FuzzDecodeInferResponse: any answer decodes or fails with an error, never a panic or a huge
// allocation.
func FuzzDecodeInferResponse(f *testing.F) {
	f.Add([]byte(`{"outputs":[{"name":"p","shape":[1],"datatype":"FP32","data":[0.5]}]}`), "")
	f.Add([]byte(`{"outputs":[{"name":"p","shape":[1],"datatype":"INT64","parameters":{"binary_data_size":8}}]}`+"\x01\x00\x00\x00\x00\x00\x00\x00"), "89")
	f.Fuzz(func(t *testing.T, body []byte, length string) {
		DecodeInferResponse(body, length)
	})
}
