package forest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// The model loader walks the document with a pull decoder instead of building a
// map[string]any: a model with thousands of trees holds millions of numbers, and
// reading them straight into typed slices keeps load time and memory small. JSON and
// UBJSON produce the same token stream, so one walker (load.go) serves both.

type tokKind uint8

const (
	tokEOF tokKind = iota
	tokObjStart
	tokObjEnd
	tokArrStart
	tokArrEnd
	tokString // also object keys
	tokNumber
	tokBool
	tokNull
)

func (k tokKind) String() string {
	switch k {
	case tokEOF:
		return "end of input"
	case tokObjStart:
		return "object"
	case tokObjEnd:
		return "end of object"
	case tokArrStart:
		return "array"
	case tokArrEnd:
		return "end of array"
	case tokString:
		return "string"
	case tokNumber:
		return "number"
	case tokBool:
		return "boolean"
	case tokNull:
		return "null"
	}
	return "unknown token"
}

// token is one lexical item. JSON numbers keep their text so that float32 fields are
// parsed straight from the decimal (decimal -> float64 -> float32 can round twice);
// UBJSON numbers arrive typed.
type token struct {
	kind tokKind
	text []byte // string contents or JSON number text; valid until the next call
	num  float64
	ival int64
	// numKind says how a number is held: numText (JSON text), numInt, numF32, numF64.
	numKind uint8
	b       bool
}

const (
	numText uint8 = iota
	numInt
	numF32
	numF64
)

// maxDepth bounds container nesting so hostile input cannot exhaust memory through the
// container stack; real models nest less than ten levels.
const maxDepth = 128

type tokenReader interface {
	next() (token, error)
	// pos is the byte offset reached, for error messages.
	pos() int
}

// ---------------------------------------------------------------------------
// JSON

type jsonState uint8

const (
	jsValue    jsonState = iota // expecting a value (top level or after ':')
	jsArrFirst                  // just after '[': value or ']'
	jsArrNext                   // after an array element: ',' or ']'
	jsObjFirst                  // just after '{': key or '}'
	jsObjNext                   // after a member value: ',' or '}'
	jsObjKey                    // after ',' in an object: key
	jsDone                      // top-level value complete
)

type jsonReader struct {
	data  []byte
	off   int
	stack []byte // '{' or '[' per open container
	state jsonState
	buf   []byte // unescaped string scratch
}

func newJSONReader(data []byte) *jsonReader {
	return &jsonReader{data: data, stack: make([]byte, 0, 16)}
}

func (r *jsonReader) pos() int { return r.off }

func (r *jsonReader) skipSpace() {
	for r.off < len(r.data) {
		switch r.data[r.off] {
		case ' ', '\t', '\n', '\r':
			r.off++
		default:
			return
		}
	}
}

func (r *jsonReader) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at byte %d: %s", r.off, fmt.Sprintf(format, args...))
}

// afterValue moves the state machine past a complete value.
func (r *jsonReader) afterValue() {
	if len(r.stack) == 0 {
		r.state = jsDone
		return
	}
	if r.stack[len(r.stack)-1] == '[' {
		r.state = jsArrNext
	} else {
		r.state = jsObjNext
	}
}

func (r *jsonReader) next() (token, error) {
	for {
		r.skipSpace()
		if r.off >= len(r.data) {
			if r.state == jsDone {
				return token{kind: tokEOF}, nil
			}
			return token{}, r.errorf("unexpected end of input")
		}
		c := r.data[r.off]
		switch r.state {
		case jsDone:
			return token{}, r.errorf("unexpected %q after the top-level value", c)
		case jsArrNext:
			switch c {
			case ',':
				r.off++
				r.state = jsValue
				continue
			case ']':
				return r.closeContainer('[')
			}
			return token{}, r.errorf("expected ',' or ']', got %q", c)
		case jsObjNext:
			switch c {
			case ',':
				r.off++
				r.state = jsObjKey
				continue
			case '}':
				return r.closeContainer('{')
			}
			return token{}, r.errorf("expected ',' or '}', got %q", c)
		case jsObjFirst, jsObjKey:
			if c == '}' && r.state == jsObjFirst {
				return r.closeContainer('{')
			}
			if c != '"' {
				return token{}, r.errorf("expected object key, got %q", c)
			}
			s, err := r.readString()
			if err != nil {
				return token{}, err
			}
			r.skipSpace()
			if r.off >= len(r.data) || r.data[r.off] != ':' {
				return token{}, r.errorf("expected ':' after object key %q", s)
			}
			r.off++
			r.state = jsValue
			return token{kind: tokString, text: s}, nil
		case jsArrFirst:
			if c == ']' {
				return r.closeContainer('[')
			}
		}
		// A value.
		switch c {
		case '{', '[':
			if len(r.stack) >= maxDepth {
				return token{}, r.errorf("nesting deeper than %d", maxDepth)
			}
			r.off++
			r.stack = append(r.stack, c)
			if c == '{' {
				r.state = jsObjFirst
				return token{kind: tokObjStart}, nil
			}
			r.state = jsArrFirst
			return token{kind: tokArrStart}, nil
		case '"':
			s, err := r.readString()
			if err != nil {
				return token{}, err
			}
			r.afterValue()
			return token{kind: tokString, text: s}, nil
		}
		return r.readWord()
	}
}

func (r *jsonReader) closeContainer(open byte) (token, error) {
	r.off++
	r.stack = r.stack[:len(r.stack)-1]
	r.afterValue()
	if open == '{' {
		return token{kind: tokObjEnd}, nil
	}
	return token{kind: tokArrEnd}, nil
}

// readWord reads a number or a literal. XGBoost writes non-finite floats as bare NaN,
// Infinity and -Infinity (Python's json module does the same), which are not JSON but
// must load.
func (r *jsonReader) readWord() (token, error) {
	start := r.off
	for r.off < len(r.data) {
		c := r.data[r.off]
		if (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '+' || c == '-' || c == '.' {
			r.off++
			continue
		}
		break
	}
	w := r.data[start:r.off]
	if len(w) == 0 {
		return token{}, r.errorf("unexpected %q", r.data[r.off])
	}
	switch string(w) {
	case "true", "false":
		r.afterValue()
		return token{kind: tokBool, b: w[0] == 't'}, nil
	case "null":
		r.afterValue()
		return token{kind: tokNull}, nil
	}
	if !validNumber(w) {
		r.off = start
		return token{}, r.errorf("invalid value %q", truncate(w, 32))
	}
	r.afterValue()
	return token{kind: tokNumber, text: w, numKind: numText}, nil
}

// validNumber accepts a JSON number, or NaN / Infinity / Inf with an optional sign in
// any case (the non-finite spellings of XGBoost, Python and strconv). It checks syntax
// only; conversion happens when a field is read.
func validNumber(w []byte) bool {
	i := 0
	if i < len(w) && (w[i] == '-' || w[i] == '+') {
		i++
	}
	if rest := w[i:]; bytes.EqualFold(rest, []byte("nan")) || bytes.EqualFold(rest, []byte("inf")) || bytes.EqualFold(rest, []byte("infinity")) {
		return true
	}
	if w[0] == '+' {
		return false
	}
	digits := func() int {
		s := i
		for i < len(w) && w[i] >= '0' && w[i] <= '9' {
			i++
		}
		return i - s
	}
	if n := digits(); n == 0 || (n > 1 && w[i-n] == '0') {
		return false
	}
	if i < len(w) && w[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(w) && (w[i] == 'e' || w[i] == 'E') {
		i++
		if i < len(w) && (w[i] == '-' || w[i] == '+') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(w)
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "..."
	}
	return string(b)
}

func (r *jsonReader) readString() ([]byte, error) {
	r.off++ // opening quote
	start := r.off
	// Fast path: no escapes.
	for i := r.off; i < len(r.data); i++ {
		c := r.data[i]
		if c == '"' {
			r.off = i + 1
			return r.data[start:i], nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			r.off = i
			return nil, r.errorf("control character in string")
		}
	}
	r.buf = r.buf[:0]
	for r.off < len(r.data) {
		c := r.data[r.off]
		switch {
		case c == '"':
			r.off++
			return r.buf, nil
		case c < 0x20:
			return nil, r.errorf("control character in string")
		case c != '\\':
			r.buf = append(r.buf, c)
			r.off++
			continue
		}
		if r.off+1 >= len(r.data) {
			break
		}
		e := r.data[r.off+1]
		r.off += 2
		switch e {
		case '"', '\\', '/':
			r.buf = append(r.buf, e)
		case 'b':
			r.buf = append(r.buf, '\b')
		case 'f':
			r.buf = append(r.buf, '\f')
		case 'n':
			r.buf = append(r.buf, '\n')
		case 'r':
			r.buf = append(r.buf, '\r')
		case 't':
			r.buf = append(r.buf, '\t')
		case 'u':
			if r.off+4 > len(r.data) {
				return nil, r.errorf("truncated \\u escape")
			}
			v, err := strconv.ParseUint(string(r.data[r.off:r.off+4]), 16, 32)
			if err != nil {
				return nil, r.errorf("invalid \\u escape")
			}
			r.off += 4
			r.buf = appendRune(r.buf, rune(v))
		default:
			return nil, r.errorf("invalid escape \\%c", e)
		}
	}
	return nil, r.errorf("unterminated string")
}

func appendRune(b []byte, r rune) []byte {
	return append(b, string(r)...)
}

// ---------------------------------------------------------------------------
// UBJSON (https://ubjson.org), as XGBoost writes it: big-endian, keys without the 'S'
// marker, and optimised containers ('$' type, '#' count) for its typed arrays, e.g.
// split_conditions as "[$d#L<count>" followed by raw float32s.

type ubjFrame struct {
	obj       bool
	remaining int64 // elements (arrays) or members (objects) left; -1 if unbounded
	typ       byte  // fixed element marker or 0
	wantKey   bool  // object: next token is a key
}

type ubjReader struct {
	data  []byte
	off   int
	stack []ubjFrame
	done  bool
}

func newUBJReader(data []byte) *ubjReader {
	return &ubjReader{data: data, stack: make([]ubjFrame, 0, 16)}
}

func (r *ubjReader) pos() int { return r.off }

func (r *ubjReader) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid UBJSON at byte %d: %s", r.off, fmt.Sprintf(format, args...))
}

func (r *ubjReader) need(n int) error {
	if n < 0 || len(r.data)-r.off < n {
		return r.errorf("unexpected end of input (need %d more bytes, have %d)", n, len(r.data)-r.off)
	}
	return nil
}

func (r *ubjReader) byte1() (byte, error) {
	if err := r.need(1); err != nil {
		return 0, err
	}
	c := r.data[r.off]
	r.off++
	return c, nil
}

// readInt reads an integer whose marker is m (lengths and counts).
func (r *ubjReader) readInt(m byte) (int64, error) {
	switch m {
	case 'i':
		if err := r.need(1); err != nil {
			return 0, err
		}
		v := int64(int8(r.data[r.off]))
		r.off++
		return v, nil
	case 'U':
		if err := r.need(1); err != nil {
			return 0, err
		}
		v := int64(r.data[r.off])
		r.off++
		return v, nil
	case 'I':
		if err := r.need(2); err != nil {
			return 0, err
		}
		v := int64(int16(binary.BigEndian.Uint16(r.data[r.off:])))
		r.off += 2
		return v, nil
	case 'l':
		if err := r.need(4); err != nil {
			return 0, err
		}
		v := int64(int32(binary.BigEndian.Uint32(r.data[r.off:])))
		r.off += 4
		return v, nil
	case 'L':
		if err := r.need(8); err != nil {
			return 0, err
		}
		v := int64(binary.BigEndian.Uint64(r.data[r.off:]))
		r.off += 8
		return v, nil
	}
	return 0, r.errorf("expected an integer marker, got %q", m)
}

// readLength reads a marker + integer used as a string length or a count.
func (r *ubjReader) readLength() (int64, error) {
	m, err := r.byte1()
	if err != nil {
		return 0, err
	}
	n, err := r.readInt(m)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, r.errorf("negative length %d", n)
	}
	return n, nil
}

func (r *ubjReader) readBytes(n int64) ([]byte, error) {
	if n > int64(len(r.data)-r.off) {
		return nil, r.errorf("length %d runs past the end of input (%d bytes left)", n, len(r.data)-r.off)
	}
	b := r.data[r.off : r.off+int(n)]
	r.off += int(n)
	return b, nil
}

// elemSize is the encoded size of one element with fixed marker m, used to reject
// counts that cannot fit in the input before looping over them.
func elemSize(m byte) int64 {
	switch m {
	case 'i', 'U', 'C':
		return 1
	case 'I':
		return 2
	case 'l', 'd':
		return 4
	case 'L', 'D':
		return 8
	}
	return 1
}

func (r *ubjReader) next() (token, error) {
	if n := len(r.stack); n > 0 {
		f := &r.stack[n-1]
		if f.remaining == 0 {
			return r.pop(f.obj)
		}
		if f.obj && f.wantKey {
			if f.remaining < 0 {
				if err := r.skipNoop(); err != nil {
					return token{}, err
				}
				if err := r.need(1); err != nil {
					return token{}, err
				}
				if r.data[r.off] == '}' {
					r.off++
					return r.pop(true)
				}
			}
			n, err := r.readLength()
			if err != nil {
				return token{}, err
			}
			key, err := r.readBytes(n)
			if err != nil {
				return token{}, err
			}
			f.wantKey = false
			return token{kind: tokString, text: key}, nil
		}
		var m byte
		if f.typ != 0 {
			m = f.typ
		} else {
			if err := r.skipNoop(); err != nil {
				return token{}, err
			}
			c, err := r.byte1()
			if err != nil {
				return token{}, err
			}
			if !f.obj && f.remaining < 0 && c == ']' {
				return r.pop(false)
			}
			m = c
		}
		if f.remaining > 0 {
			f.remaining--
		}
		if f.obj {
			f.wantKey = true
		}
		return r.value(m)
	}
	if r.done {
		if r.off != len(r.data) {
			return token{}, r.errorf("%d bytes after the top-level value", len(r.data)-r.off)
		}
		return token{kind: tokEOF}, nil
	}
	if err := r.skipNoop(); err != nil {
		return token{}, err
	}
	m, err := r.byte1()
	if err != nil {
		return token{}, err
	}
	r.done = true
	return r.value(m)
}

func (r *ubjReader) skipNoop() error {
	for r.off < len(r.data) && r.data[r.off] == 'N' {
		r.off++
	}
	return nil
}

func (r *ubjReader) pop(obj bool) (token, error) {
	r.stack = r.stack[:len(r.stack)-1]
	if obj {
		return token{kind: tokObjEnd}, nil
	}
	return token{kind: tokArrEnd}, nil
}

func (r *ubjReader) value(m byte) (token, error) {
	switch m {
	case 'Z':
		return token{kind: tokNull}, nil
	case 'T', 'F':
		return token{kind: tokBool, b: m == 'T'}, nil
	case 'i', 'U', 'I', 'l', 'L':
		v, err := r.readInt(m)
		if err != nil {
			return token{}, err
		}
		return token{kind: tokNumber, numKind: numInt, ival: v, num: float64(v)}, nil
	case 'd':
		if err := r.need(4); err != nil {
			return token{}, err
		}
		v := math.Float32frombits(binary.BigEndian.Uint32(r.data[r.off:]))
		r.off += 4
		return token{kind: tokNumber, numKind: numF32, num: float64(v)}, nil
	case 'D':
		if err := r.need(8); err != nil {
			return token{}, err
		}
		v := math.Float64frombits(binary.BigEndian.Uint64(r.data[r.off:]))
		r.off += 8
		return token{kind: tokNumber, numKind: numF64, num: v}, nil
	case 'C':
		b, err := r.readBytes(1)
		if err != nil {
			return token{}, err
		}
		return token{kind: tokString, text: b}, nil
	case 'S', 'H':
		n, err := r.readLength()
		if err != nil {
			return token{}, err
		}
		b, err := r.readBytes(n)
		if err != nil {
			return token{}, err
		}
		if m == 'H' {
			if _, err := strconv.ParseFloat(string(b), 64); err != nil {
				return token{}, r.errorf("invalid high-precision number %q", truncate(b, 32))
			}
			return token{kind: tokNumber, numKind: numText, text: b}, nil
		}
		return token{kind: tokString, text: b}, nil
	case '[', '{':
		if len(r.stack) >= maxDepth {
			return token{}, r.errorf("nesting deeper than %d", maxDepth)
		}
		f := ubjFrame{obj: m == '{', remaining: -1, wantKey: m == '{'}
		if r.off < len(r.data) && r.data[r.off] == '$' {
			r.off++
			t, err := r.byte1()
			if err != nil {
				return token{}, err
			}
			switch t {
			case 'i', 'U', 'I', 'l', 'L', 'd', 'D', 'C', 'S', 'H':
			default:
				// Zero-width element types (null, bools, no-op) would let a tiny
				// input declare billions of elements; XGBoost never writes them.
				return token{}, r.errorf("unsupported container element type %q", t)
			}
			f.typ = t
			if r.off >= len(r.data) || r.data[r.off] != '#' {
				return token{}, r.errorf("container type '$' without count '#'")
			}
		}
		if r.off < len(r.data) && r.data[r.off] == '#' {
			r.off++
			n, err := r.readLength()
			if err != nil {
				return token{}, err
			}
			// Every element takes at least one byte (keys too): a count larger than
			// what is left is corrupt.
			min := n
			if f.typ != 0 {
				min = n * elemSize(f.typ)
				if n > math.MaxInt64/8 {
					min = math.MaxInt64
				}
			}
			if min > int64(len(r.data)-r.off) {
				return token{}, r.errorf("container count %d runs past the end of input (%d bytes left)", n, len(r.data)-r.off)
			}
			f.remaining = n
		}
		r.stack = append(r.stack, f)
		if f.obj {
			return token{kind: tokObjStart}, nil
		}
		return token{kind: tokArrStart}, nil
	}
	return token{}, r.errorf("unknown marker %q", m)
}

// ---------------------------------------------------------------------------
// Token conversions shared by both formats.

func (t *token) float32() (float32, error) {
	switch t.kind {
	case tokNumber:
		switch t.numKind {
		case numText:
			v, err := strconv.ParseFloat(string(t.text), 32)
			if err != nil && !isRangeErr(err) {
				return 0, fmt.Errorf("invalid number %q", truncate(t.text, 32))
			}
			return float32(v), nil
		case numInt:
			return float32(t.ival), nil
		default:
			return float32(t.num), nil
		}
	case tokString:
		return parseFloat32String(t.text)
	case tokBool:
		if t.b {
			return 1, nil
		}
		return 0, nil
	}
	return 0, fmt.Errorf("expected a number, got %s", t.kind)
}

func parseFloat32String(s []byte) (float32, error) {
	v, err := strconv.ParseFloat(string(s), 32)
	if err != nil && !isRangeErr(err) {
		return 0, fmt.Errorf("expected a number, got string %q", truncate(s, 32))
	}
	return float32(v), nil
}

func isRangeErr(err error) bool {
	var ne *strconv.NumError
	return errors.As(err, &ne) && ne.Err == strconv.ErrRange
}

// int returns an integer; XGBoost 1.x writes integer parameters as strings ("20").
func (t *token) int() (int64, error) {
	switch t.kind {
	case tokNumber:
		switch t.numKind {
		case numInt:
			return t.ival, nil
		case numText:
			if v, err := strconv.ParseInt(string(t.text), 10, 64); err == nil {
				return v, nil
			}
		}
		v, err := t.float32Exact()
		if err != nil {
			return 0, err
		}
		return v, nil
	case tokString:
		if v, err := strconv.ParseInt(string(t.text), 10, 64); err == nil {
			return v, nil
		}
		f, err := strconv.ParseFloat(string(t.text), 64)
		if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, fmt.Errorf("expected an integer, got %q", truncate(t.text, 32))
		}
		return int64(f), nil
	case tokBool:
		if t.b {
			return 1, nil
		}
		return 0, nil
	}
	return 0, fmt.Errorf("expected an integer, got %s", t.kind)
}

func (t *token) float32Exact() (int64, error) {
	f := t.num
	if t.numKind == numText {
		var err error
		f, err = strconv.ParseFloat(string(t.text), 64)
		if err != nil && !isRangeErr(err) {
			return 0, fmt.Errorf("invalid number %q", truncate(t.text, 32))
		}
	}
	if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, fmt.Errorf("expected an integer, got %v", f)
	}
	return int64(f), nil
}
