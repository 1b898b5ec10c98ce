package forest

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// The model loader walks the document with a pull decoder instead of building a
// map[string]any: a model with thousands of trees holds millions of numbers, and
// reading them straight into typed slices keeps load time and memory small. JSON and
// UBJSON produce the same token stream (decode_json.go, decode_ubjson.go), so one
// walker (load.go) serves both.

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
