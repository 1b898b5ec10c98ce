package v2

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestDecodeJSONData(t *testing.T) {
	cases := []struct {
		name, datatype, data string
		want                 int
		out                  []float32
		err                  string
	}{
		{"flat", "FP32", "[1, 2.5, -3e2]", 3, []float32{1, 2.5, -300}, ""},
		{"nested", "FP64", "[[1,2],[3,4]]", 4, []float32{1, 2, 3, 4}, ""},
		{"null is missing", "FP32", "[1,null]", 2, []float32{1, float32(math.NaN())}, ""},
		{"out of range is infinite", "FP32", "[1e999,-1e999]", 2, []float32{float32(math.Inf(1)), float32(math.Inf(-1))}, ""},
		{"bool", "BOOL", "[true,false]", 2, []float32{1, 0}, ""},
		{"ints", "INT16", "[-5, 7]", 2, []float32{-5, 7}, ""},
		{"too few", "FP32", "[1]", 2, nil, "shape declares 2 elements, data holds 1"},
		{"too many", "FP32", "[1,2,3]", 2, nil, "more than the 2 elements"},
		{"unbalanced", "FP32", "[[1,2]", 2, nil, "unbalanced brackets"},
		{"string", "FP32", `["1"]`, 1, nil, "is a string"},
		{"fraction in int", "INT64", "[1.5]", 1, nil, "not a INT64 value"},
		{"uint negative", "UINT32", "[-1]", 1, nil, "not a UINT32 value"},
		{"bool number", "BOOL", "[1]", 1, nil, "BOOL wants true or false"},
		{"bytes", "BYTES", `["a"]`, 1, nil, "BYTES is not supported"},
		{"fp16 as JSON", "FP16", "[1]", 1, nil, `datatype "FP16" is not supported as JSON data`},
		{"int8 range", "INT8", "[-128,127]", 2, []float32{-128, 127}, ""},
		{"int8 above", "INT8", "[128]", 1, nil, "not a INT8 value"},
		{"uint8 above", "UINT8", "[256]", 1, nil, "not a UINT8 value"},
		{"int16 below", "INT16", "[-32769]", 1, nil, "not a INT16 value"},
		{"uint16 range", "UINT16", "[0,65535]", 2, []float32{0, 65535}, ""},
		{"uint16 above", "UINT16", "[65536]", 1, nil, "not a UINT16 value"},
		{"int32 above", "INT32", "[2147483648]", 1, nil, "not a INT32 value"},
		{"uint32 range", "UINT32", "[4294967295]", 1, []float32{4294967295}, ""},
		{"uint32 above", "UINT32", "[4294967296]", 1, nil, "not a UINT32 value"},
		{"uint64 negative", "UINT64", "[-1]", 1, nil, "not a UINT64 value"},
		{"empty", "FP32", "", 1, nil, "no data"},
	}
	for _, c := range cases {
		got, err := DecodeJSONData(nil, "x", c.datatype, []byte(c.data), c.want)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || KindOf(err) != KindInvalidInput {
				t.Errorf("%s: err = %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || len(got) != len(c.out) {
			t.Errorf("%s: got %v, %v", c.name, got, err)
			continue
		}
		for i := range got {
			if got[i] != c.out[i] && !(math.IsNaN(float64(got[i])) && math.IsNaN(float64(c.out[i]))) {
				t.Errorf("%s: got %v, want %v", c.name, got, c.out)
			}
		}
	}
}

func TestDecodeBinaryData(t *testing.T) {
	half := []uint16{0x3c00, 0xc000, 0x7c00, 0x0001, 0x3555} // 1, -2, +Inf, smallest subnormal, ~0.333
	var b []byte
	for _, h := range half {
		b = binary.LittleEndian.AppendUint16(b, h)
	}
	got, err := DecodeBinaryData(nil, "x", "FP16", b, 5)
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{1, -2, float32(math.Inf(1)), 5.9604645e-08, 0.33325195}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("FP16 %#04x = %v, want %v", half[i], got[i], want[i])
		}
	}
	if _, err := DecodeBinaryData(nil, "x", "FP32", make([]byte, 7), 2); err == nil || !strings.Contains(err.Error(), "need 2 elements x 4 bytes = 8") {
		t.Fatalf("short FP32: %v", err)
	}
	if _, err := DecodeBinaryData(nil, "x", "BOOL", []byte{2}, 1); err == nil {
		t.Fatal("BOOL byte 2 accepted")
	}
	v, err := DecodeBinaryData(nil, "x", "INT8", []byte{0xff}, 1)
	if err != nil || v[0] != -1 {
		t.Fatalf("INT8 0xff = %v, %v", v, err)
	}
}

func TestSanitizeNonFinite(t *testing.T) {
	in := `{"id":"NaN Infinity","data":[NaN,-Infinity,Infinity,1,-NaN]}`
	want := `{"id":"NaN Infinity","data":[null,-1e999,1e999,1,null]}`
	if got := string(SanitizeNonFinite([]byte(in))); got != want {
		t.Fatalf("got %s\nwant %s", got, want)
	}
	for _, body := range []string{`{"a":1}`, `{"datatype":"INT64","name":"NIR"}`} {
		plain := []byte(body)
		if got := SanitizeNonFinite(plain); &got[0] != &plain[0] {
			t.Fatalf("%s, without NaN or Infinity, was copied", body)
		}
	}
}

func TestElementCount(t *testing.T) {
	const noError Kind = -1
	for _, c := range []struct {
		shape []int64
		want  int
		kind  Kind // noError: none
	}{
		{[]int64{1, 4}, 4, noError},
		{[]int64{}, 1, noError},
		{[]int64{1, math.MaxInt32}, math.MaxInt32, noError},
		{[]int64{2, math.MaxInt32/2 + 1}, 0, KindTooLarge},
		{[]int64{math.MaxInt32 + 1}, 0, KindTooLarge},
		{[]int64{65536, 65536}, 0, KindTooLarge},
		{[]int64{1 << 40, 1 << 40}, 0, KindTooLarge},
		// No elements: a dimension past the limit after a zero one still holds none.
		{[]int64{0, 1 << 40}, 0, noError},
		{[]int64{0, -1}, 0, KindInvalidInput},
	} {
		n, err := ElementCount("x", c.shape)
		if c.kind == noError {
			if err != nil || n != c.want {
				t.Errorf("ElementCount(%v) = %d, %v; want %d", c.shape, n, err, c.want)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Kind != c.kind {
			t.Errorf("ElementCount(%v) = %d, %v; want an error of kind %v", c.shape, n, err, c.kind)
		}
	}
}

func TestStatusTableCoversEveryKind(t *testing.T) {
	for k := KindInternal; k <= KindTimeout; k++ {
		if _, ok := statusTable[k]; !ok {
			t.Errorf("kind %d has no status", k)
		}
	}
	if HTTPStatus(Errorf(KindModelNotFound, "x")) != 404 || HTTPStatus(Errorf(KindNotReady, "x")) != 503 ||
		HTTPStatus(Errorf(KindInvalidInput, "x")) != 400 || HTTPStatus(Errorf(KindNotImplemented, "x")) != 501 {
		t.Fatal("status table disagrees with the protocol")
	}
}

func FuzzDecodeJSONData(f *testing.F) {
	for _, s := range []string{"[1,2,3,4]", "[[1,2],[3,null]]", "[true,false]", "[1e999]", "[[", "]]", `["a"]`, "[-0.0e-0]"} {
		f.Add(s, "FP32", 4)
	}
	f.Fuzz(func(t *testing.T, data, datatype string, want int) {
		if want < 0 || want > 1<<16 {
			return
		}
		out, err := DecodeJSONData(nil, "x", datatype, []byte(data), want)
		if err == nil && len(out) != want {
			t.Fatalf("decoded %d elements, want %d", len(out), want)
		}
	})
}

func FuzzDecodeBinaryData(f *testing.F) {
	f.Add([]byte{0, 0, 128, 63}, "FP32", 1)
	f.Add([]byte{0, 60}, "FP16", 1)
	f.Add([]byte{1, 0, 1}, "BOOL", 3)
	f.Fuzz(func(t *testing.T, b []byte, datatype string, want int) {
		if want < 0 || want > 1<<16 {
			return
		}
		out, err := DecodeBinaryData(nil, "x", datatype, b, want)
		if err == nil && len(out) != want {
			t.Fatalf("decoded %d elements, want %d", len(out), want)
		}
	})
}

func FuzzSanitizeNonFinite(f *testing.F) {
	f.Add([]byte(`{"a":[NaN,"NaN\"",Infinity]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = SanitizeNonFinite(b)
	})
}

// parseDecimal reads what strconv.ParseFloat reads, to the bit, or declines.
func FuzzParseDecimal(f *testing.F) {
	for _, s := range []string{"5.1", "-0", "0.1", "3.4028235e38", "123456789012345", "1234567890123456", "0.000000000000000000001",
		"00.1", "1.", ".5", "-", "", "1e5", "-12.75", "0.30000000000000004", "9007199254740993"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseDecimal([]byte(s))
		if !ok {
			return
		}
		want, err := strconv.ParseFloat(s, 64)
		if err != nil || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("parseDecimal(%q) = %v; strconv.ParseFloat %v, %v", s, got, want, err)
		}
	})
}
