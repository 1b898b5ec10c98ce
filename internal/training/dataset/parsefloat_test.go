package dataset

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

func checkParseFloat32(t *testing.T, s string) {
	t.Helper()
	want, wantErr := strconv.ParseFloat(s, 32)
	got, err := parseFloat32(s)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("parseFloat32(%q): error %v, strconv: %v", s, err, wantErr)
	}
	if err == nil && math.Float32bits(got) != math.Float32bits(float32(want)) {
		t.Fatalf("parseFloat32(%q) = %v (%#x), strconv: %v (%#x)", s, got, math.Float32bits(got), float32(want), math.Float32bits(float32(want)))
	}
}

func TestParseFloat32MatchesStrconv(t *testing.T) {
	for _, s := range []string{
		"0", "-0", "+0", "0.0", ".5", "5.", "-.5", "1e5", "1E-5", "1e+5", "00012.5000", "0.000001",
		"3.4028235e38", "3.4028236e38", "1e39", "1e-45", "1e-46", "1.17549435e-38", "123456789012345",
		"1234567890123456", "16777217", "16777217.0", "33554435", "0.1", "-12.375", "", "-", ".", "e5",
		"1e", "1e+", "1.2.3", "1,5", "0x1p3", "1_000", "inf", "NaN", "nan", " 1", "1 ", "9007199254740993",
		"1e22", "1e23", "1e-22", "1e-23", "4.9e-324", "0e999999", "123e-9999",
		// float32 halfway points between 1 and its successor: rounding twice would break ties.
		"1.000000059604644775390625", "1.0000000596046448", "16777217e0", "8388609.5",
	} {
		checkParseFloat32(t, s)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	for range 200000 {
		var s string
		switch rng.IntN(4) {
		case 0:
			s = strconv.FormatFloat(rng.NormFloat64()*math.Pow(10, float64(rng.IntN(20)-10)), 'f', rng.IntN(10), 64)
		case 1:
			s = strconv.FormatFloat(rng.ExpFloat64()*math.Pow(10, float64(rng.IntN(60)-30)), 'e', rng.IntN(16), 64)
		case 2:
			// Exact float32 halfway points, written out in full.
			f := math.Float32frombits(rng.Uint32() & 0x7f7fffff)
			mid := (float64(f) + float64(math.Nextafter32(f, float32(math.Inf(1))))) / 2
			s = strconv.FormatFloat(mid, 'g', -1, 64)
		default:
			s = strconv.FormatInt(rng.Int64N(1<<62)>>rng.IntN(62), 10)
		}
		checkParseFloat32(t, s)
	}
}

func FuzzParseFloat32(f *testing.F) {
	for _, s := range []string{"1.5", "-0.000123", "1e10", "16777217", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { checkParseFloat32(t, s) })
}
