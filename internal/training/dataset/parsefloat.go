package dataset

import (
	"math"
	"strconv"
)

// pow10 holds the powers of ten that float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// parseFloat32 is strconv.ParseFloat(s, 32) with a fast path for the plain decimals that make up
// nearly all data files ("-12.375", "3e-5"): with at most 15 significant digits and a power of
// ten up to 22, one float64 multiplication or division of exact operands rounds correctly
// (Clinger's fast path). Narrowing that float64 to float32 is then correct too unless it lies
// exactly halfway between two float32s, where rounding twice could differ from rounding once;
// that case, and everything else, goes to strconv. Results are bit-identical to strconv's
// (tested against it).
func parseFloat32(s string) (float32, error) {
	i := 0
	neg := false
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		neg = s[i] == '-'
		i++
	}
	var mant uint64
	digits, exp := 0, 0
	sawDigit, sawDot := false, false
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			sawDigit = true
			if c == '0' && digits == 0 {
				if sawDot {
					exp--
				}
				continue // leading zeros are not significant
			}
			digits++
			if digits > 15 {
				return slowFloat32(s)
			}
			mant = mant*10 + uint64(c-'0')
			if sawDot {
				exp--
			}
		case c == '.' && !sawDot:
			sawDot = true
		default:
			goto rest
		}
	}
rest:
	if !sawDigit {
		return slowFloat32(s)
	}
	if i < len(s) {
		if s[i] != 'e' && s[i] != 'E' {
			return slowFloat32(s)
		}
		i++
		eneg := false
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			eneg = s[i] == '-'
			i++
		}
		if i == len(s) {
			return slowFloat32(s)
		}
		e := 0
		for ; i < len(s); i++ {
			c := s[i]
			if c < '0' || c > '9' || e > 1000 {
				return slowFloat32(s)
			}
			e = e*10 + int(c-'0')
		}
		if eneg {
			e = -e
		}
		exp += e
	}
	var d float64
	switch {
	case mant == 0:
		d = 0
	case exp >= 0 && exp <= 22:
		d = float64(mant) * pow10[exp]
	case exp < 0 && exp >= -22:
		d = float64(mant) / pow10[-exp]
	default:
		return slowFloat32(s)
	}
	// A float64 that is exactly a float32 halfway point: its 29 bits below float32 precision are
	// 1000...0. (Subnormal and out-of-range float32 results also go the slow way.)
	if d != 0 && (math.Float64bits(d)&(1<<29-1) == 1<<28 || d < 0x1p-126 || d > math.MaxFloat32) {
		return slowFloat32(s)
	}
	if neg {
		d = -d
	}
	return float32(d), nil
}

func slowFloat32(s string) (float32, error) {
	f, err := strconv.ParseFloat(s, 32)
	return float32(f), err
}
