package v2

import (
	"bytes"
	"encoding/binary"
	"math"
	"strconv"
)

// datatypeInfo is what the codecs know of a V2 numeric datatype.
type datatypeInfo struct {
	size   int  // bytes per element in the binary tensor extension; 0 for a datatype this server does not take
	json   bool // accepted as JSON data (FP16 has no JSON form in the spec)
	isInt  bool
	lo, hi float64 // an integer datatype's range, to reject a value that does not fit it
}

// lookupDatatype is a switch, not a map: a map hashes the name, and a one-row request
// looked its datatype up in two (a tenth of its decoding).
func lookupDatatype(datatype string) datatypeInfo {
	switch datatype {
	case "FP32":
		return datatypeInfo{size: 4, json: true}
	case "FP64":
		return datatypeInfo{size: 8, json: true}
	case "FP16":
		return datatypeInfo{size: 2}
	case "BOOL":
		return datatypeInfo{size: 1, json: true}
	case "INT8":
		return datatypeInfo{1, true, true, math.MinInt8, math.MaxInt8}
	case "UINT8":
		return datatypeInfo{1, true, true, 0, math.MaxUint8}
	case "INT16":
		return datatypeInfo{2, true, true, math.MinInt16, math.MaxInt16}
	case "UINT16":
		return datatypeInfo{2, true, true, 0, math.MaxUint16}
	case "INT32":
		return datatypeInfo{4, true, true, math.MinInt32, math.MaxInt32}
	case "UINT32":
		return datatypeInfo{4, true, true, 0, math.MaxUint32}
	case "INT64":
		return datatypeInfo{8, true, true, math.MinInt64, math.MaxInt64}
	case "UINT64":
		return datatypeInfo{8, true, true, 0, math.MaxUint64}
	}
	return datatypeInfo{}
}

// ElementCount is the number of elements a shape holds, or an error for a negative dimension
// or more than math.MaxInt32 elements.
func ElementCount(name string, shape []int64) (int, error) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, Errorf(KindInvalidInput, "input %s: shape %v has a negative dimension", name, shape)
		}
		// n is at most MaxInt32, so n x d fits an int64 once d is too: a multiplication, where
		// n > MaxInt32/d took a division a dimension.
		if n != 0 && (d > math.MaxInt32 || n*d > math.MaxInt32) {
			return 0, Errorf(KindTooLarge, "input %s: shape %v holds too many elements", name, shape)
		}
		n *= d
	}
	return int(n), nil
}

// DecodeJSONData appends the elements of a JSON tensor (flat or nested arrays, in row-major
// order) to dst as float32. null is a missing value (NaN). It checks that there are exactly want
// elements and that each fits datatype.
func DecodeJSONData(dst []float32, name, datatype string, raw []byte, want int) ([]float32, error) {
	return decodeJSON(dst, name, datatype, raw, want, nil)
}

// maxNesting bounds the depth of nested JSON data; the model's tensors have at most two
// dimensions, and a deeper document is refused before it is walked.
const maxNesting = 8

// decodeJSON is DecodeJSONData that, given the tensor's shape, also checks nested data
// against it: every innermost array holds shape[last] elements and every level holds
// shape[d] arrays, so a ragged [[1,2,3],[4,5,6,7,8]] is not read as two rows of four.
func decodeJSON(dst []float32, name, datatype string, raw []byte, want int, shape []int64) ([]float32, error) {
	info := lookupDatatype(datatype)
	if !info.json {
		if datatype == "BYTES" {
			return dst, Errorf(KindInvalidInput, "input %s: datatype BYTES is not supported: the model takes numeric features (FP32, FP64, INT*, UINT*, BOOL)", name)
		}
		return dst, Errorf(KindInvalidInput, "input %s: datatype %q is not supported as JSON data; want one of BOOL, INT8..INT64, UINT8..UINT64, FP32, FP64", name, datatype)
	}
	if len(raw) == 0 {
		return dst, Errorf(KindInvalidInput, "input %s: no data (give \"data\", or binary data with the %s parameter)", name, ParamBinaryDataSize)
	}
	start := len(dst)
	isBool := datatype == "BOOL"
	nested := shape != nil && len(shape) > 1 && len(shape) <= maxNesting && isNested(raw)
	var count [maxNesting]int64 // elements (or arrays) seen in the open array at each depth
	depth := 0
	i := 0
	for i < len(raw) {
		c := raw[i]
		switch c {
		case ' ', '\t', '\n', '\r', ',':
			i++
			continue
		case '[':
			if nested {
				if depth >= len(shape) {
					return dst[:start], Errorf(KindInvalidInput, "input %s: data is nested deeper than its shape %v", name, shape)
				}
				if depth > 0 {
					count[depth-1]++
				}
				count[depth] = 0
			}
			depth++
			i++
			continue
		case ']':
			if nested && depth > 0 && count[depth-1] != shape[depth-1] {
				if depth == len(shape) && depth >= 2 {
					return dst[:start], Errorf(KindInvalidInput, "input %s: row %d has %d elements; shape %v wants %d", name, count[depth-2]-1, count[depth-1], shape, shape[depth-1])
				}
				return dst[:start], Errorf(KindInvalidInput, "input %s: an array at depth %d holds %d elements; shape %v wants %d", name, depth, count[depth-1], shape, shape[depth-1])
			}
			depth--
			i++
			continue
		}
		j := i
		for j < len(raw) && raw[j] != ',' && raw[j] != ']' && raw[j] != ' ' && raw[j] != '\n' && raw[j] != '\t' && raw[j] != '\r' {
			j++
		}
		tok := raw[i:j]
		i = j
		idx := len(dst) - start
		if idx >= want {
			return dst[:start], Errorf(KindInvalidInput, "input %s: data holds more than the %d elements its shape declares", name, want)
		}
		if nested {
			if depth != len(shape) {
				return dst[:start], Errorf(KindInvalidInput, "input %s: element %d is at depth %d; nested data of shape %v has its values at depth %d", name, idx, depth, shape, len(shape))
			}
			count[depth-1]++
		}
		var v float32
		switch {
		case string(tok) == "null":
			v = float32(math.NaN())
		case isBool:
			switch string(tok) {
			case "true":
				v = 1
			case "false":
				v = 0
			default:
				return dst[:start], Errorf(KindInvalidInput, "input %s: element %d is %s; datatype BOOL wants true or false", name, idx, tok)
			}
		default:
			if tok[0] == '"' {
				return dst[:start], Errorf(KindInvalidInput, "input %s: element %d is a string %s; datatype %s wants numbers", name, idx, tok, datatype)
			}
			f, ok := parseDecimal(tok)
			var err error
			if !ok {
				f, err = strconv.ParseFloat(string(tok), 64)
			}
			if err != nil && !isRangeErr(err) {
				return dst[:start], Errorf(KindInvalidInput, "input %s: element %d is %q, not a number", name, idx, tok)
			}
			if info.isInt {
				if f != math.Trunc(f) || f < info.lo || f > info.hi {
					return dst[:start], Errorf(KindInvalidInput, "input %s: element %d is %s, not a %s value", name, idx, tok, datatype)
				}
			}
			v = float32(f)
		}
		dst = append(dst, v)
	}
	if depth != 0 {
		return dst[:start], Errorf(KindInvalidInput, "input %s: data has unbalanced brackets", name)
	}
	if got := len(dst) - start; got != want {
		return dst[:start], Errorf(KindInvalidInput, "input %s: shape declares %d elements, data holds %d", name, want, got)
	}
	return dst, nil
}

// pow10 are the powers of ten a float64 holds exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
	1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseDecimal reads the numbers clients mostly send, -?digits(.digits)? with at most 15
// significant digits, as strconv.ParseFloat(tok, 64) does but in a fraction of its time: the
// digits are an integer below 2^53 and 10^k is exact for k <= 22, so one IEEE division rounds
// the quotient exactly as ParseFloat rounds the decimal (Clinger's fast path). false for
// anything else, which ParseFloat then reads.
func parseDecimal(tok []byte) (float64, bool) {
	i, neg := 0, false
	if len(tok) > 0 && tok[0] == '-' {
		i, neg = 1, true
	}
	mant, digits, frac, dot := uint64(0), 0, 0, false
	start := i
	for ; i < len(tok); i++ {
		c := tok[i]
		switch {
		case c >= '0' && c <= '9':
			mant = mant*10 + uint64(c-'0')
			if mant != 0 {
				digits++
			}
			if dot {
				frac++
			}
		case c == '.' && !dot && i > start:
			dot = true
		default:
			return 0, false
		}
	}
	// JSON's grammar: digits on both sides of the dot, no leading zeros.
	if i == start || tok[len(tok)-1] == '.' || (tok[start] == '0' && len(tok) > start+1 && tok[start+1] != '.') {
		return 0, false
	}
	if digits > 15 || frac >= len(pow10) {
		return 0, false
	}
	f := float64(mant) / pow10[frac]
	if neg {
		f = -f
	}
	return f, true
}

// isNested reports whether JSON data starts with an array of arrays.
func isNested(raw []byte) bool {
	opened := false
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
		case '[':
			if opened {
				return true
			}
			opened = true
		default:
			return false
		}
	}
	return false
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// JSONData is a tensor's "data" as the request's raw JSON.
type JSONData []byte

// Check bounds the elements the JSON can hold: each takes a byte and a separator.
func (d JSONData) Check(name, _ string, want int) error {
	if have := (len(d) + 1) / 2; want > have {
		return Errorf(KindInvalidInput, "input %s: shape declares %d elements but its %d bytes of JSON data can hold at most %d", name, want, len(d), have)
	}
	return nil
}

// Append decodes the elements into dst, checking nested data against shape.
func (d JSONData) Append(dst []float32, name, datatype string, shape []int64, want int) ([]float32, error) {
	return decodeJSON(dst, name, datatype, d, want, shape)
}

// BinaryData is a tensor in the binary tensor extension's little-endian layout, which is also
// the layout of gRPC's raw_input_contents.
type BinaryData []byte

// Check requires exactly want elements of datatype (an unknown datatype is refused by
// Append, naming it).
func (d BinaryData) Check(name, datatype string, want int) error {
	if size := lookupDatatype(datatype).size; size > 0 && int64(len(d)) != int64(want)*int64(size) {
		return Errorf(KindInvalidInput, "input %s: binary data is %d bytes; shape and datatype %s need %d elements x %d bytes = %d",
			name, len(d), datatype, want, size, int64(want)*int64(size))
	}
	return nil
}

// Append decodes the elements into dst.
func (d BinaryData) Append(dst []float32, name, datatype string, _ []int64, want int) ([]float32, error) {
	return DecodeBinaryData(dst, name, datatype, d, want)
}

// DecodeBinaryData appends want little-endian elements of datatype from b to dst as float32.
func DecodeBinaryData(dst []float32, name, datatype string, b []byte, want int) ([]float32, error) {
	size := lookupDatatype(datatype).size
	if size == 0 {
		return dst, Errorf(KindInvalidInput, "input %s: datatype %q is not supported as binary data; want BOOL, INT8..INT64, UINT8..UINT64, FP16, FP32 or FP64", name, datatype)
	}
	if len(b) != want*size {
		return dst, Errorf(KindInvalidInput, "input %s: binary data is %d bytes; shape and datatype %s need %d elements x %d bytes = %d",
			name, len(b), datatype, want, size, want*size)
	}
	le := binary.LittleEndian
	for k := 0; k < want; k++ {
		p := b[k*size:]
		var v float32
		switch datatype {
		case "FP32":
			v = math.Float32frombits(le.Uint32(p))
		case "FP64":
			v = float32(math.Float64frombits(le.Uint64(p)))
		case "FP16":
			v = halfToFloat(le.Uint16(p))
		case "BOOL":
			if p[0] > 1 {
				return dst, Errorf(KindInvalidInput, "input %s: element %d is byte %d; BOOL wants 0 or 1", name, k, p[0])
			}
			v = float32(p[0])
		case "INT8":
			v = float32(int8(p[0]))
		case "UINT8":
			v = float32(p[0])
		case "INT16":
			v = float32(int16(le.Uint16(p)))
		case "UINT16":
			v = float32(le.Uint16(p))
		case "INT32":
			v = float32(int32(le.Uint32(p)))
		case "UINT32":
			v = float32(le.Uint32(p))
		case "INT64":
			v = float32(int64(le.Uint64(p)))
		case "UINT64":
			v = float32(le.Uint64(p))
		}
		dst = append(dst, v)
	}
	return dst, nil
}

// halfToFloat converts an IEEE 754 half-precision value.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal
		f := float32(frac) / 1024 / 16384
		if sign != 0 {
			f = -f
		}
		return f
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | frac<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | frac<<13)
}

// nonFinite are the bare tokens Python's json module writes for NaN and infinities; JSON has no
// such literals, so they are rewritten (outside strings) before decoding: NaN becomes null (a
// missing value) and the infinities an out-of-range number that parses to ±Inf.
var nonFinite = [][2][]byte{
	{[]byte("-Infinity"), []byte("-1e999")},
	{[]byte("Infinity"), []byte("1e999")},
	{[]byte("-NaN"), []byte("null")},
	{[]byte("NaN"), []byte("null")},
}

// SanitizeNonFinite returns body with bare NaN/Infinity tokens outside strings rewritten, or
// body itself when it has none.
func SanitizeNonFinite(body []byte) []byte {
	// Both tokens hold an N or an I, which a request's keys and FP32 data have none of: two
	// byte scans rule them out before two substring searches (6 of a one-row body's 150 ns).
	if bytes.IndexByte(body, 'N') < 0 && bytes.IndexByte(body, 'I') < 0 ||
		!bytes.Contains(body, []byte("NaN")) && !bytes.Contains(body, []byte("Infinity")) {
		return body
	}
	out := make([]byte, 0, len(body)+16)
	inString := false
	for i := 0; i < len(body); i++ {
		c := body[i]
		if inString {
			out = append(out, c)
			if c == '\\' && i+1 < len(body) {
				i++
				out = append(out, body[i])
			} else if c == '"' {
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			out = append(out, c)
			continue
		}
		replaced := false
		for _, r := range nonFinite {
			if bytes.HasPrefix(body[i:], r[0]) {
				out = append(out, r[1]...)
				i += len(r[0]) - 1
				replaced = true
				break
			}
		}
		if !replaced {
			out = append(out, c)
		}
	}
	return out
}
