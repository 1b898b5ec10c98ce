// Package npy reads the NumPy .npy files XGBoost's reference outputs are kept in (the model zoo
// under runtime/forest/testdata/zoo), for the evaluator's tests and the runtime binary's.
package npy

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// Array is an .npy array converted to float64: Data in C (row-major) order, Shape its
// dimensions.
type Array struct {
	Shape []int
	Data  []float64
}

// Float32 returns the values as float32 (exact for float32 and small-integer arrays).
func (a *Array) Float32() []float32 {
	out := make([]float32, len(a.Data))
	for i, v := range a.Data {
		out[i] = float32(v)
	}
	return out
}

// Read reads a NumPy .npy file (format versions 1 to 3) holding a little-endian,
// C-ordered array of float32, float64 or a signed or unsigned integer type of 1 to 8
// bytes: what XGBoost's reference outputs use (float32 predictions, integer leaf ids).
func Read(path string) (*Array, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	a, err := parseNpy(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

func parseNpy(data []byte) (*Array, error) {
	if len(data) < 10 || string(data[:6]) != "\x93NUMPY" {
		return nil, fmt.Errorf("not an .npy file (no \\x93NUMPY magic)")
	}
	var hlen, off int
	switch data[6] {
	case 1:
		hlen, off = int(binary.LittleEndian.Uint16(data[8:10])), 10
	case 2, 3:
		if len(data) < 12 {
			return nil, fmt.Errorf("truncated header")
		}
		hlen, off = int(binary.LittleEndian.Uint32(data[8:12])), 12
	default:
		return nil, fmt.Errorf("unknown .npy format version %d", data[6])
	}
	if off+hlen > len(data) {
		return nil, fmt.Errorf("header of %d bytes runs past the file", hlen)
	}
	header := string(data[off : off+hlen])
	body := data[off+hlen:]
	descr, err := headerField(header, "descr")
	if err != nil {
		return nil, err
	}
	descr = strings.Trim(descr, `'"`)
	if f, err := headerField(header, "fortran_order"); err != nil {
		return nil, err
	} else if f != "False" {
		return nil, fmt.Errorf("fortran_order %s: only C order is read", f)
	}
	shapeText, err := headerField(header, "shape")
	if err != nil {
		return nil, err
	}
	var shape []int
	n := 1
	for _, p := range strings.Split(strings.Trim(shapeText, "()"), ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		d, err := strconv.Atoi(p)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("shape %s: bad dimension %q", shapeText, p)
		}
		shape = append(shape, d)
		n *= d
	}
	if len(descr) < 3 || (descr[0] != '<' && descr[0] != '|') {
		return nil, fmt.Errorf("dtype %q: only little-endian arrays are read", descr)
	}
	size, err := strconv.Atoi(descr[2:])
	if err != nil {
		return nil, fmt.Errorf("dtype %q unknown", descr)
	}
	if len(body) != n*size {
		return nil, fmt.Errorf("shape %v of %s needs %d bytes, file has %d", shape, descr, n*size, len(body))
	}
	out := make([]float64, n)
	for i := range out {
		b := body[i*size : (i+1)*size]
		switch {
		case descr[1] == 'f' && size == 4:
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
		case descr[1] == 'f' && size == 8:
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b))
		case descr[1] == 'i' || descr[1] == 'u':
			var u uint64
			for k := size - 1; k >= 0; k-- {
				u = u<<8 | uint64(b[k])
			}
			if descr[1] == 'i' && size < 8 && u>>(8*size-1) != 0 {
				u |= ^uint64(0) << (8 * size) // sign-extend
			}
			if descr[1] == 'i' {
				out[i] = float64(int64(u))
			} else {
				out[i] = float64(u)
			}
		default:
			return nil, fmt.Errorf("dtype %q: only float32, float64 and integer arrays are read", descr)
		}
	}
	return &Array{Shape: shape, Data: out}, nil
}

// headerField returns the text of one value in the header's Python dict literal.
func headerField(h, key string) (string, error) {
	i := strings.Index(h, "'"+key+"'")
	if i < 0 {
		return "", fmt.Errorf("header %q has no %s", h, key)
	}
	rest := strings.TrimLeft(h[i+len(key)+2:], " :")
	if strings.HasPrefix(rest, "(") {
		j := strings.IndexByte(rest, ')')
		if j < 0 {
			return "", fmt.Errorf("header %q: unterminated shape", h)
		}
		return rest[:j+1], nil
	}
	j := strings.IndexAny(rest, ",}")
	if j < 0 {
		return "", fmt.Errorf("header %q: unterminated %s", h, key)
	}
	return strings.TrimSpace(rest[:j]), nil
}

// Compare checks got, an output in XGBoost's row-major layout, against the reference a: the same
// number of values, each equal (NaN equal to NaN), or when exact is false within abs + rel*|want|.
// The error counts the values that differ and names the first few by row and column.
func (a *Array) Compare(got []float32, exact bool, abs, rel float64) error {
	if len(got) != len(a.Data) {
		return fmt.Errorf("%d values, XGBoost gives %d (shape %v)", len(got), len(a.Data), a.Shape)
	}
	cols := len(a.Data) / max(1, a.Shape[0])
	var bad []string
	nbad := 0
	for i, w := range a.Data {
		g := float64(got[i])
		ok := g == w || (math.IsNaN(g) && math.IsNaN(w))
		if !ok && !exact {
			ok = math.Abs(g-w) <= abs+rel*math.Abs(w)
		}
		if !ok {
			nbad++
			if len(bad) < 4 {
				bad = append(bad, fmt.Sprintf("row %d col %d: %v, XGBoost %v", i/cols, i%cols, g, w))
			}
		}
	}
	if nbad > 0 {
		return fmt.Errorf("%d of %d values differ: %s", nbad, len(got), strings.Join(bad, "; "))
	}
	return nil
}
