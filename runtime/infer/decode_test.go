package infer

import (
	"runtime"
	"strings"
	"testing"

	"github.com/gangboost/gangboost/runtime/forest"
	v2 "github.com/gangboost/gangboost/runtime/v2"
)

func irisModel(t *testing.T) *forest.Model {
	t.Helper()
	m, err := forest.Load("../testdata/models/iris/model.json")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// allocated is the bytes fn allocates.
func allocated(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// A shape that declares more than the data can hold is refused before rows are allocated,
// with no limits configured at all.
func TestDeclaredShapeBeyondTheDataAllocatesNothing(t *testing.T) {
	m := irisModel(t)
	for _, data := range []Elements{v2.JSONData("[1,2,3,4]"), v2.BinaryData(make([]byte, 16))} {
		var err error
		n := allocated(func() {
			_, err = Decode(m, nil, &Call{Inputs: []Input{{Name: "x", Datatype: "FP32", Shape: []int64{536870911, 4}, Data: data}}}, Limits{})
		})
		if v2.KindOf(err) != v2.KindInvalidInput {
			t.Fatalf("%T: err = %v, want invalid input", data, err)
		}
		if n > 1<<20 {
			t.Fatalf("%T: refusing the request allocated %d bytes", data, n)
		}
	}
}

func TestLimits(t *testing.T) {
	m := irisModel(t)
	rows := func(n int) []Input {
		return []Input{{Name: "x", Datatype: "FP32", Shape: []int64{int64(n), 4}, Data: v2.BinaryData(make([]byte, 16*n))}}
	}
	cases := []struct {
		name    string
		call    Call
		lim     Limits
		kind    v2.Kind
		message string
	}{
		{"rows", Call{Inputs: rows(11)}, Limits{MaxRows: 10}, v2.KindTooLarge, "--max_batch_rows"},
		{"response", Call{Inputs: rows(10), Outputs: []OutputRequest{{Name: "leaf"}}}, Limits{MaxResponseValues: 599}, v2.KindTooLarge, "--max_response_values"},
		{"contribs rows", Call{Inputs: rows(3), Outputs: []OutputRequest{{Name: "contribs"}}}, Limits{MaxContribsRows: 2}, v2.KindTooLarge, "--max_contribs_rows"},
		{"repeated output", Call{Inputs: rows(1), Outputs: []OutputRequest{{Name: "margin"}, {Name: "margin"}}}, Limits{}, v2.KindInvalidInput, "requested twice"},
		{"unknown output", Call{Inputs: rows(1), Outputs: []OutputRequest{{Name: "probs"}}}, Limits{}, v2.KindInvalidInput, "unknown"},
	}
	for _, c := range cases {
		_, err := Decode(m, nil, &c.call, c.lim)
		if v2.KindOf(err) != c.kind || err == nil || !strings.Contains(err.Error(), c.message) {
			t.Errorf("%s: err = %v, want kind %d naming %q", c.name, err, c.kind, c.message)
		}
	}
	if _, err := Decode(m, nil, &Call{Inputs: rows(10), Outputs: []OutputRequest{{Name: "leaf"}}}, Limits{MaxResponseValues: 600}); err != nil {
		t.Fatalf("at the response limit: %v", err)
	}
}
