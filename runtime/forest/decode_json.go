package forest

import (
	"bytes"
	"fmt"
	"strconv"
)

// JSON, as XGBoost's save_model writes it (model.json), with its bare NaN and Infinity
// tokens. jsonReader yields the token stream load.go walks.

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
