package v2

import (
	"reflect"
	"strings"
	"testing"
)

var parseSeeds = []string{
	`{"inputs":[{"name":"input-0","shape":[1,4],"datatype":"FP32","data":[5.1,3.5,1.4,0.2]}]}`,
	`{"id":"a1","model_name":"iris","inputs":[{"name":"x","shape":[2,2],"datatype":"FP64","data":[[1,2],[3,null]]}],"outputs":[{"name":"predict_proba","parameters":{"binary_data":true}}]}`,
	`{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","parameters":{"binary_data_size":16}}],"parameters":{"binary_data_output":true}}`,
	` { "inputs" : [ { "name" : "x" , "shape" : [ 1 , 4 ] , "datatype" : "BOOL" , "data" : [ true , false , true , false ] } ] } `,
	`{"inputs":[],"outputs":[],"parameters":{}}`,
	`{"inputs":[{"shape":[],"data":[1e3,-0.5E-2,0,-0]}]}`,
	`{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[1,2,3,4]}]} xx`,
	`{"Inputs":[{"Name":"x"}]}`,
	`{"inputs":[{"name":"\u0078","shape":[1.0,4]}]}`,
	`{"inputs":[{"name":"x","data":null,"parameters":{"a":null,"b":{"c":[1,"d"]}}}]}`,
	`{"id":"a","id":"b"}`,
	`{"inputs":[{"data":[1,,2]}]}`,
	`{"inputs":[{"shape":[99999999999999999999]}]}`,
	// Shapes of up to 18 digits are read digit by digit, longer ones by strconv.
	`{"inputs":[{"shape":[999999999999999999,-999999999999999999,-0,0]}]}`,
	`{"inputs":[{"shape":[9223372036854775807,-9223372036854775808]}]}`,
	`{"inputs":[{"shape":[9223372036854775808]}]}`,
	`{"inputs":[{"shape":[-9223372036854775809]}]}`,
	`[]`,
	`null`,
	`{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP32","data":[NaN,Infinity,-Infinity,1]}]}`,
	// Flat arrays of numbers take scanner.numbers; the others fall back to the element walk.
	`{"inputs":[{"data":[ ]}]}`,
	`{"inputs":[{"data":[ 1 , -2.5e3 ,0 ]}]}`,
	`{"inputs":[{"data":[01]}]}`,
	`{"inputs":[{"data":[1,]}]}`,
	`{"inputs":[{"data":[-]}]}`,
	`{"inputs":[{"data":[1.e5]}]}`,
	`{"inputs":[{"data":[1 2]}]}`,
	`{"inputs":[{"data":[1,[2]]}]}`,
	`{"inputs":[{"data":[1,"a",null,true]}]}`,
	`{"inputs":[{"data":[1`,
}

// The fast path and encoding/json agree on every body the fast path accepts, and the fast
// path accepts the bodies clients send.
func TestParseInferRequestMatchesEncodingJSON(t *testing.T) {
	for _, body := range parseSeeds {
		checkParseAgrees(t, []byte(body))
	}
	for _, body := range parseSeeds[:6] {
		if ok := parseFast(new(InferRequest), SanitizeNonFinite([]byte(body))); !ok {
			t.Errorf("fast path declined a client-shaped body: %s", body)
		}
	}
	// ParseInferRequest, whichever path it takes, gives what encoding/json gives for the body
	// with its bare NaN and Infinity rewritten.
	for _, body := range parseSeeds {
		got, err := ParseInferRequest([]byte(body))
		want, wantErr := parseStd(SanitizeNonFinite([]byte(body)))
		if (err != nil) != (wantErr != nil) || (err == nil && !reflect.DeepEqual(got, want)) {
			t.Errorf("ParseInferRequest(%s) = %#v, %v; encoding/json of it rewritten: %#v, %v", body, got, err, want, wantErr)
		}
	}
}

func TestParseInferRequestErrors(t *testing.T) {
	for body, want := range map[string]string{
		`{"inputs":[{"data":[1,,2]}]}`:          "invalid character ','",
		`{"inputs":[{"shape":[1.5]}]}`:          "field inputs.shape: want int64",
		`{"inputs":[]} xx`:                      "trailing data",
		`{"inputs":[{"name":"x"`:                "unexpected EOF",
		`{"inputs":[{"shape":[1e30]}]}`:         "field inputs.shape",
		`{"inputs":[{"name":"x","shape":"1"}]}`: "want []int64",
	} {
		_, err := ParseInferRequest([]byte(body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to contain %q", body, err, want)
		}
		if KindOf(err) != KindInvalidInput {
			t.Errorf("%s: kind %v, want invalid input", body, KindOf(err))
		}
	}
}

// Parsing into a request that held another body gives what a fresh parse gives.
func FuzzParseInferRequestInto(f *testing.F) {
	for i, s := range parseSeeds {
		f.Add([]byte(s), []byte(parseSeeds[(i+1)%len(parseSeeds)]))
	}
	f.Fuzz(func(t *testing.T, first, second []byte) {
		var req InferRequest
		_ = ParseInferRequestInto(&req, first)
		err := ParseInferRequestInto(&req, second)
		fresh, ferr := ParseInferRequest(second)
		if (err == nil) != (ferr == nil) {
			t.Fatalf("reused parse error %v, fresh parse error %v", err, ferr)
		}
		if err == nil && !reflect.DeepEqual(&req, fresh) {
			t.Fatalf("parse of %q after %q:\nreused %#v\nfresh  %#v", second, first, &req, fresh)
		}
	})
}

// Once a request has held a body of the same form, parsing the next one allocates nothing:
// the JSON and the binary-tensor forms clients send.
func TestParseInferRequestIntoAllocatesNothing(t *testing.T) {
	for _, body := range []string{parseSeeds[0], parseSeeds[2]} {
		var req InferRequest
		b := []byte(body)
		if err := ParseInferRequestInto(&req, b); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { _ = ParseInferRequestInto(&req, b) }); n != 0 {
			t.Errorf("%s: %v allocations per parse, want 0", body, n)
		}
	}
}

func checkParseAgrees(t *testing.T, body []byte) {
	t.Helper()
	body = SanitizeNonFinite(body)
	fast := new(InferRequest)
	ok := parseFast(fast, body)
	if !ok {
		return
	}
	std, err := parseStd(body)
	if err != nil {
		t.Fatalf("fast path accepted %q, encoding/json rejects it: %v", body, err)
	}
	if !reflect.DeepEqual(fast, std) {
		t.Fatalf("fast path and encoding/json differ on %q:\nfast %#v\nstd  %#v", body, fast, std)
	}
}

func FuzzParseInferRequest(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkParseAgrees(t, body)
		_, _ = ParseInferRequest(body)
	})
}
