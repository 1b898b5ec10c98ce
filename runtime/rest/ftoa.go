package rest

import (
	"math"
	"math/bits"
	"strconv"
)

// The shortest decimal of a float32, for the probabilities and margins an answer carries.
// strconv.AppendFloat(f, 'f', -1, 32) takes 70-80 ns a value on the 2-core VM, a tenth of a
// one-row request's handler for three probabilities; this takes about half. It works in exact
// integers: f is c / 2^t with c = 4m, and the floats either side are half a step of the last
// place away, so every decimal that reads back as f lies within (c-2, c+2) / 2^t (the ends
// included when m is even: a tie reads back as the even mantissa).

var pow10u = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// shortest is f, a float32 in [1e-6, 2^24) and not a power of two, as the shortest decimal
// d x 10^q that reads back as f (round half to even), the closest to f when several are as
// short; ok is false for any other f. Within its range it gives what strconv gives for every
// float32 (TestShortestMatchesStrconv; all 368,691,272 of them with GANGBOOST_FTOA_ALL=1).
// Powers of two are left to strconv: the float below one is half as far as the float above,
// which the symmetric interval here does not describe.
func shortest(f float32) (d uint64, q int, ok bool) {
	b := math.Float32bits(f)
	if b>>31 != 0 || f < 1e-6 || f >= 1<<24 || b&(1<<23-1) == 0 {
		return 0, 0, false
	}
	exp := int(b>>23) & 0xff
	m := uint64(b&(1<<23-1)) | 1<<23
	e := exp - 150   // f = m x 2^e, e in [-43, 0]
	t := uint(2 - e) // f = c / 2^t with c = 4m: quarter steps of the last place are integers
	c := 4 * m
	lo, hi := c-2, c+2    // half a step to the floats either side: reads back as f in between
	inclusive := m&1 == 0 // a tie reads back as the even one
	// The interval always holds a decimal of nine significant digits (float32's round trip),
	// so it holds one at q = a-8, with nine or ten digits; fewer may do. From there q goes up
	// while the interval holds a multiple of 10^q: the largest such q gives the shortest.
	a := ((e + 23) * 78913) >> 18 // floor((e+23) log10 2): floor(log10 f) is a or a+1
	q = a - 8
	l, lrem, _ := divide(lo, t, q)
	h, hrem, _ := divide(hi, t, q)
	if inclusive {
		if lrem != 0 {
			l++ // the least integer at or above lo
		}
	} else {
		l++ // the least integer above lo
		if hrem == 0 {
			h-- // the greatest integer below hi
		}
	}
	// [l, h] are the d with d x 10^q in the interval. At q+1 they are the same bounds over ten,
	// rounded inward: ceil(ceil(x)/10) = ceil(x/10), and likewise for floor.
	for {
		var nl, nh uint64
		if inclusive {
			nl, nh = (l+9)/10, h/10
		} else {
			nl, nh = (l-1)/10+1, (h+1+9)/10-1
		}
		if nl > nh {
			break
		}
		l, h, q = nl, nh, q+1
	}
	// The closest to f at that exponent: f's own value there, rounded half to even.
	r, rem, half := divide(c, t, q)
	if rem > half || rem == half && r&1 == 1 {
		r++
	}
	return min(max(r, l), h), q, true
}

// divide is n / (2^t x 10^q) as a quotient, its remainder and half the divisor, both scaled
// alike so they compare. For q <= 0 that is n x 10^-q / 2^t: with n < 2^27, -q <= 16 and
// 2 <= t <= 45 here, the product fits 128 bits and the quotient 64.
func divide(n uint64, t uint, q int) (quo, rem, half uint64) {
	if q <= 0 {
		h, l := bits.Mul64(n, pow10u[-q])
		quo = h<<(64-t) | l>>t
		return quo, l & (1<<t - 1), 1 << (t - 1)
	}
	div := pow10u[q] << t
	return n / div, n % div, div / 2
}

// appendShortest formats f as strconv.AppendFloat(b, float64(f), 'f', -1, 32) does.
func appendShortest(b []byte, f float32) []byte {
	neg := math.Signbit(float64(f))
	a := f
	if neg {
		a = -f
	}
	d, q, ok := shortest(a)
	if !ok {
		return strconv.AppendFloat(b, float64(f), 'f', -1, 32)
	}
	if neg {
		b = append(b, '-')
	}
	var digits [20]byte
	n := len(digits)
	for ; d > 0; d /= 10 {
		n--
		digits[n] = byte('0' + d%10)
	}
	ds := digits[n:]
	if q >= 0 {
		b = append(b, ds...)
		for ; q > 0; q-- {
			b = append(b, '0')
		}
		return b
	}
	k := -q
	if len(ds) > k {
		b = append(b, ds[:len(ds)-k]...)
		b = append(b, '.')
		return append(b, ds[len(ds)-k:]...)
	}
	b = append(b, '0', '.')
	for i := len(ds); i < k; i++ {
		b = append(b, '0')
	}
	return append(b, ds...)
}
