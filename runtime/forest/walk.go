package forest

import (
	"errors"
	"fmt"
	"strings"
)

// walker reads typed values from a token stream; errors carry the JSON path of the
// field being read ("learner.gradient_booster.model.trees[3].split_conditions").
type walker struct {
	r tokenReader
}

// fieldError prefixes an error with the path of the field it happened in. The path is
// collected while unwinding, innermost first.
type fieldError struct {
	path []string
	err  error
}

func (e *fieldError) Error() string {
	var b strings.Builder
	for i := len(e.path) - 1; i >= 0; i-- {
		p := e.path[i]
		if b.Len() > 0 && !strings.HasPrefix(p, "[") {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	b.WriteString(": ")
	b.WriteString(e.err.Error())
	return b.String()
}

func (e *fieldError) Unwrap() error { return e.err }

func inField(name string, err error) error {
	if err == nil {
		return nil
	}
	if fe, ok := err.(*fieldError); ok {
		fe.path = append(fe.path, name)
		return fe
	}
	return &fieldError{path: []string{name}, err: err}
}

func (w *walker) next() (token, error) { return w.r.next() }

// errUnknownField refuses a field no XGBoost model file this reader knows (1.0 to 3.4)
// has: it may change what the model predicts, so it is never ignored. The field's
// path is added as the error unwinds.
var errUnknownField = errors.New("unknown field: no XGBoost model file known to this evaluator (1.0 to 3.4) has it, and ignoring it could change predictions; the model is refused")

// unknown consumes the value of an unknown field and refuses it.
func (w *walker) unknown() error {
	if err := w.skipValue(); err != nil {
		return err
	}
	return errUnknownField
}

// object reads an object, calling fn for each member; fn must consume the value.
func (w *walker) object(fn func(key string) error) error {
	t, err := w.next()
	if err != nil {
		return err
	}
	return w.objectFrom(t, fn)
}

func (w *walker) objectFrom(t token, fn func(key string) error) error {
	if t.kind != tokObjStart {
		return fmt.Errorf("expected an object, got %s", t.kind)
	}
	for {
		k, err := w.next()
		if err != nil {
			return err
		}
		if k.kind == tokObjEnd {
			return nil
		}
		if k.kind != tokString {
			return fmt.Errorf("expected an object key, got %s", k.kind)
		}
		key := string(k.text)
		if err := fn(key); err != nil {
			return inField(key, err)
		}
	}
}

// array reads an array, calling fn for each element token.
func (w *walker) array(fn func(i int, t token) error) error {
	t, err := w.next()
	if err != nil {
		return err
	}
	if t.kind != tokArrStart {
		return fmt.Errorf("expected an array, got %s", t.kind)
	}
	for i := 0; ; i++ {
		e, err := w.next()
		if err != nil {
			return err
		}
		if e.kind == tokArrEnd {
			return nil
		}
		if err := fn(i, e); err != nil {
			return inField(fmt.Sprintf("[%d]", i), err)
		}
	}
}

// skip consumes the value starting with t.
func (w *walker) skip(t token) error {
	depth := 0
	for {
		switch t.kind {
		case tokObjStart, tokArrStart:
			depth++
		case tokObjEnd, tokArrEnd:
			depth--
		case tokEOF:
			return fmt.Errorf("unexpected end of input")
		}
		if depth <= 0 {
			return nil
		}
		var err error
		t, err = w.next()
		if err != nil {
			return err
		}
	}
}

func (w *walker) skipValue() error {
	t, err := w.next()
	if err != nil {
		return err
	}
	return w.skip(t)
}

func scalar(t token) error {
	switch t.kind {
	case tokObjStart, tokArrStart, tokObjEnd, tokArrEnd, tokEOF:
		return fmt.Errorf("expected a scalar, got %s", t.kind)
	}
	return nil
}

func (w *walker) float32s() ([]float32, error) {
	var out []float32
	err := w.array(func(_ int, t token) error {
		v, err := t.float32()
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

func (w *walker) int32s() ([]int32, error) {
	var out []int32
	err := w.array(func(_ int, t token) error {
		v, err := t.int()
		if err != nil {
			return err
		}
		if v < -1<<31 || v >= 1<<31 {
			return fmt.Errorf("integer %d out of int32 range", v)
		}
		out = append(out, int32(v))
		return nil
	})
	return out, err
}

func (w *walker) int64s() ([]int64, error) {
	var out []int64
	err := w.array(func(_ int, t token) error {
		v, err := t.int()
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	return out, err
}

func (w *walker) strs() ([]string, error) {
	var out []string
	err := w.array(func(_ int, t token) error {
		if t.kind != tokString {
			return fmt.Errorf("expected a string, got %s", t.kind)
		}
		out = append(out, string(t.text))
		return nil
	})
	return out, err
}

func (w *walker) str() (string, error) {
	t, err := w.next()
	if err != nil {
		return "", err
	}
	if t.kind != tokString {
		if e := w.skip(t); e != nil {
			return "", e
		}
		return "", fmt.Errorf("expected a string, got %s", t.kind)
	}
	return string(t.text), nil
}

func (w *walker) int() (int64, error) {
	t, err := w.next()
	if err != nil {
		return 0, err
	}
	if err := scalar(t); err != nil {
		return 0, err
	}
	return t.int()
}

// countScalars consumes one value and returns how many scalars (numbers, strings,
// booleans, nulls) it holds at any depth, object keys not counted.
func (w *walker) countScalars() (int, error) {
	// stack: per open container, 'a' (array), 'k' (object, key next) or 'v' (object,
	// member value next).
	var stack []byte
	n := 0
	for {
		t, err := w.next()
		if err != nil {
			return 0, err
		}
		switch t.kind {
		case tokEOF:
			return 0, fmt.Errorf("unexpected end of input")
		case tokObjEnd, tokArrEnd:
			if len(stack) == 0 {
				return 0, fmt.Errorf("unexpected %s", t.kind)
			}
			stack = stack[:len(stack)-1]
		default:
			top := len(stack) - 1
			if top >= 0 && stack[top] == 'k' {
				stack[top] = 'v'
				continue
			}
			if top >= 0 && stack[top] == 'v' {
				stack[top] = 'k'
			}
			switch t.kind {
			case tokObjStart:
				stack = append(stack, 'k')
			case tokArrStart:
				stack = append(stack, 'a')
			default:
				n++
			}
		}
		if len(stack) == 0 {
			return n, nil
		}
	}
}
