package forest

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
)

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
