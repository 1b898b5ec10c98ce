package dataset

import (
	"encoding/binary"
	"math"
	"math/bits"
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
	if f, ok := exactFloat32(mant, exp, neg); ok {
		return f, nil
	}
	return slowFloat32(s)
}

// exactFloat32 is mant x 10^exp, negated if neg, when Clinger's fast path gives it correctly
// rounded to float32 (mant has at most 15 digits); ok is false otherwise.
func exactFloat32(mant uint64, exp int, neg bool) (f float32, ok bool) {
	var d float64
	switch {
	case mant == 0:
		d = 0
	case exp >= 0 && exp <= 22:
		d = float64(mant) * pow10[exp]
	case exp < 0 && exp >= -22:
		d = float64(mant) / pow10[-exp]
	default:
		return 0, false
	}
	// A float64 that is exactly a float32 halfway point: its 29 bits below float32 precision are
	// 1000...0. (Subnormal and out-of-range float32 results also go the slow way.)
	if d != 0 && (math.Float64bits(d)&(1<<29-1) == 1<<28 || d < 0x1p-126 || d > math.MaxFloat32) {
		return 0, false
	}
	if neg {
		d = -d
	}
	return float32(d), true
}

func slowFloat32(s string) (float32, error) {
	f, err := strconv.ParseFloat(s, 32)
	return float32(f), err
}

// parseNumberField parses the CSV field that starts at b[i] as parseCell would, for plain
// decimals that Clinger's fast path takes (exactFloat32) and for an empty cell (missing: NaN). It
// returns the value and the index of the byte that ends the field (a comma, a newline or
// len(b)); ok is false for anything else (spaces, quotes, NA, many digits, other separators),
// which the caller then parses field by field. One pass over the bytes with no field slices,
// taking up to 8 digits at a time: this and the record splitting it saves were most of a CSV
// load's time (BenchmarkCSVRows).
func parseNumberField(b []byte, i int) (v float32, end int, ok bool) {
	if i == len(b) || b[i] == ',' || b[i] == '\n' {
		return float32(math.NaN()), i, true
	}
	neg := false
	if c := b[i]; c == '-' || c == '+' {
		neg = c == '-'
		i++
	}
	// mant holds every digit, leading zeros too; at most 19 cannot overflow it.
	var mant uint64
	digits, exp := 0, 0
	var n int
	mant, n, i = appendDigits(b, i, mant, 19)
	digits += n
	if i < len(b) && b[i] == '.' {
		mant, n, i = appendDigits(b, i+1, mant, 19-digits)
		digits += n
		exp -= n
	}
	if digits == 0 || digits > 19 || mant > 1<<53 {
		return 0, i, false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		eneg := false
		if i < len(b) && (b[i] == '-' || b[i] == '+') {
			eneg = b[i] == '-'
			i++
		}
		e, estart := 0, i
		for ; i < len(b) && e <= 1000; i++ {
			c := b[i] - '0'
			if c > 9 {
				break
			}
			e = e*10 + int(c)
		}
		if i == estart {
			return 0, i, false
		}
		if eneg {
			e = -e
		}
		exp += e
	}
	if i < len(b) && b[i] != ',' && b[i] != '\n' {
		return 0, i, false
	}
	f, ok := exactFloat32(mant, exp, neg)
	return f, i, ok
}

// appendDigits appends the digits that start at b[i] to mant; n is their count and end the index
// after them. Past room digits, n is more than room and mant is garbage.
func appendDigits(b []byte, i int, mant uint64, room int) (_ uint64, n, end int) {
	for i+8 <= len(b) {
		k, v := leadingDigits(binary.LittleEndian.Uint64(b[i:]))
		n += k
		i += k
		if n > room {
			return mant, n, i
		}
		mant = mant*pow10u[k] + v
		if k < 8 {
			return mant, n, i
		}
	}
	for ; i < len(b); i++ {
		c := b[i] - '0'
		if c > 9 {
			break
		}
		if n++; n > room {
			return mant, n, i
		}
		mant = mant*10 + uint64(c)
	}
	return mant, n, i
}

var pow10u = [...]uint64{1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000}

// leadingDigits returns how many of the 8 bytes in x (the first in the lowest byte) are ASCII
// digits before the first other byte, and their value: SWAR, as in Lemire's "Faster integer
// parsing" (2022). A byte is no digit when adding 0x46 sets its top bit (above '9') or
// subtracting 0x30 does (below '0', or above 0xb9 where the addition wraps); carries and
// borrows reach only the bytes above the first non-digit, which do not count.
func leadingDigits(x uint64) (n int, v uint64) {
	const lsb, msb = 0x0101010101010101, 0x8080808080808080
	non := ((x + 0x46*lsb) | (x - 0x30*lsb)) & msb
	n = bits.TrailingZeros64(non) >> 3
	if n == 0 {
		return 0, 0
	}
	// The n digits to the top bytes, zeros (as leading zero digits) below, then pairs, quads
	// and the eight combined.
	x = (x & 0x0f0f0f0f0f0f0f0f) << (64 - 8*n)
	x = (x * (10<<8 + 1)) >> 8
	x = ((x & 0x00ff00ff00ff00ff) * (100<<16 + 1)) >> 16
	x = ((x & 0x0000ffff0000ffff) * (10000<<32 + 1)) >> 32
	return n, x
}
