package rest

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"github.com/gangboost/gangboost/runtime/infer"
	v2 "github.com/gangboost/gangboost/runtime/v2"
)

// appendResponse writes the infer response body into b[:0], reusing its memory. Outputs asked
// for as binary go after the JSON part, whose length it returns (0 when no output is binary);
// each one's size follows from its values, so the binary part is appended after the JSON
// directly. The JSON is written by hand: the same bytes json.Marshal gives for
// v2.InferResponse (TestEncodeResponseMatchesMarshal), without reflection on the hot path.
func appendResponse(b []byte, model, version, id string, outs []infer.Output) (body []byte, jsonLen int) {
	size := 96 + len(model) + len(version) + len(id)
	for _, o := range outs {
		size += 64 + len(o.Name) + 12*len(o.Values)
	}
	b = slices.Grow(b[:0], size)
	b = append(b, `{"model_name":`...)
	b = appendString(b, model)
	if version != "" {
		b = append(b, `,"model_version":`...)
		b = appendString(b, version)
	}
	b = append(b, `,"id":`...)
	b = appendString(b, id)
	b = append(b, `,"outputs":[`...)
	binary := false
	for i, o := range outs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = appendString(b, o.Name)
		b = append(b, `,"shape":`...)
		if o.Shape == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for j, d := range o.Shape {
				if j > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, d, 10)
			}
			b = append(b, ']')
		}
		b = append(b, `,"datatype":`...)
		b = appendString(b, o.Datatype)
		if o.Binary {
			binary = true
			b = append(b, `,"parameters":{"`+v2.ParamBinaryDataSize+`":`...)
			b = strconv.AppendInt(b, int64(binarySize(o)), 10)
			b = append(b, "}}"...)
			continue
		}
		b = append(b, `,"data":`...)
		b = appendData(b, o)
		b = append(b, '}')
	}
	b = append(b, "]}"...)
	if !binary {
		return b, 0
	}
	jsonLen = len(b)
	for _, o := range outs {
		if o.Binary {
			b = appendBinary(b, o)
		}
	}
	return b, jsonLen
}

// appendString writes s as json.Marshal does; strings that need escaping (quotes, control
// characters, HTML characters, non-ASCII) go through json.Marshal itself.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plainJSON[s[i]] {
			q, _ := json.Marshal(s)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plainJSON marks the bytes json.Marshal writes as they are inside a string: printable ASCII
// but the quote, the backslash and the HTML characters it escapes. One load a byte, where
// seven comparisons cost 4% of a one-row request's handler.
var plainJSON = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()

// appendData writes an output's values as a flat JSON array: INT64 outputs as integers, others as
// float32 the way json.Marshal formats them. JSON has no NaN or infinity, so a non-finite value
// (possible for margins of extreme inputs) is written as null.
func appendData(b []byte, o infer.Output) []byte {
	b = append(b, '[')
	for i, v := range o.Values {
		if i > 0 {
			b = append(b, ',')
		}
		switch {
		case o.Datatype == "INT64":
			b = strconv.AppendInt(b, int64(v), 10)
		case math.IsNaN(float64(v)) || math.IsInf(float64(v), 0):
			b = append(b, "null"...)
		default:
			b = appendFloat32(b, v)
		}
	}
	return append(b, ']')
}

// appendFloat32 formats f exactly as encoding/json does: shortest representation, exponent
// form below 1e-6 and from 1e21 on, with e-07 shortened to e-7.
func appendFloat32(b []byte, f float32) []byte {
	abs := float32(math.Abs(float64(f)))
	if abs == 0 || abs >= 1e-6 && abs < 1e21 {
		return appendShortest(b, f)
	}
	b = strconv.AppendFloat(b, float64(f), 'e', -1, 32)
	if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1]
		b = b[:n-1]
	}
	return b
}

// binarySize is the bytes appendBinary writes for o.
func binarySize(o infer.Output) int {
	if o.Datatype == "INT64" {
		return 8 * len(o.Values)
	}
	return 4 * len(o.Values)
}

func appendBinary(b []byte, o infer.Output) []byte {
	for _, v := range o.Values {
		if o.Datatype == "INT64" {
			b = binary.LittleEndian.AppendUint64(b, uint64(int64(v)))
		} else {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
	}
	return b
}
