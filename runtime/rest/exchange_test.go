package rest

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"strconv"
	"testing"

	"github.com/gangboost/gangboost/runtime/registry"
	"github.com/gangboost/gangboost/runtime/service"
)

// inferBody is one request of the forms clients send: its body and Inference-Header-Content-Length.
type inferBody struct {
	name      string
	body      []byte
	headerLen string
}

// binaryRow is the one-row iris request in the binary tensor extension, answered in binary.
func binaryRow() inferBody {
	header := `{"inputs":[{"name":"input-0","shape":[1,4],"datatype":"FP32","parameters":{"binary_data_size":16}}],"parameters":{"binary_data_output":true}}`
	b := []byte(header)
	for _, v := range []float32{5.1, 3.5, 1.4, 0.2} {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return inferBody{"binary-1row", b, strconv.Itoa(len(header))}
}

var inferBodies = []inferBody{
	{"json-1row", rowsJSON(1), ""},
	binaryRow(),
	{"json-3rows-2outputs", []byte(`{"id":"abc","inputs":[{"name":"x","shape":[3,4],"datatype":"FP64","data":[[5.1,3.5,1.4,0.2],[6.7,3.0,5.2,2.3],[5.9,3.0,4.2,1.5]]}],"outputs":[{"name":"predict"},{"name":"predict_proba","parameters":{"binary_data":true}}]}`), ""},
	{"columns", []byte(`{"parameters":{"content_type":"pd"},"inputs":[{"name":"sepal_length","shape":[1],"datatype":"FP32","data":[5.1]},{"name":"sepal_width","shape":[1],"datatype":"FP32","data":[3.5]},{"name":"petal_length","shape":[1],"datatype":"FP32","data":[1.4]},{"name":"petal_width","shape":[1],"datatype":"FP32","data":[0.2]}]}`), ""},
	{"contribs", []byte(`{"inputs":[{"name":"x","shape":[4],"datatype":"INT32","data":[5,3,1,0]}],"outputs":[{"name":"contribs"},{"name":"leaf"}]}`), ""},
}

func irisVersion(t testing.TB, svc *service.Service) (*registry.Model, *registry.Loaded) {
	t.Helper()
	m, l, err := svc.Acquire("iris", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Release)
	return m, l
}

// serveOnce answers r with x, returning a copy of the answer.
func serveOnce(t testing.TB, x *exchange, svc *service.Service, m *registry.Model, l *registry.Loaded, r inferBody) ([]byte, int) {
	t.Helper()
	x.body = append(x.body[:0], r.body...)
	jsonLen, err := x.serve(context.Background(), svc, m, l, r.headerLen, "id-1")
	if err != nil {
		t.Fatalf("%s: %v", r.name, err)
	}
	return bytes.Clone(x.resp), jsonLen
}

// An exchange that served other requests answers each one byte for byte as a fresh one does:
// nothing of an earlier request's rows, outputs, parameters or shapes leaks into the next.
func TestReusedExchangeAnswersAsAFreshOne(t *testing.T) {
	svc := newService(t, false)
	m, l := irisVersion(t, svc)
	reused := new(exchange)
	for round := 0; round < 2; round++ {
		for _, r := range inferBodies {
			want, wantLen := serveOnce(t, new(exchange), svc, m, l, r)
			got, gotLen := serveOnce(t, reused, svc, m, l, r)
			if !bytes.Equal(got, want) || gotLen != wantLen {
				t.Errorf("round %d, %s: reused exchange answered (json length %d)\n%q\na fresh one (json length %d)\n%q", round, r.name, gotLen, got, wantLen, want)
			}
		}
	}
}

// The decode -> evaluate -> encode path of a one-row request, JSON or binary, allocates
// nothing once its exchange has served a request of the same form.
func TestOneRowInferPathAllocatesNothing(t *testing.T) {
	svc := newService(t, false)
	m, l := irisVersion(t, svc)
	for _, r := range inferBodies[:2] {
		x := new(exchange)
		serveOnce(t, x, svc, m, l, r)
		allocs := testing.AllocsPerRun(200, func() {
			x.body = append(x.body[:0], r.body...)
			if _, err := x.serve(context.Background(), svc, m, l, r.headerLen, "id-1"); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per request, want 0", r.name, allocs)
		}
	}
}
