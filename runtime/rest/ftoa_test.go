package rest

import (
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
)

// TestShortestMatchesStrconv: appendShortest writes what strconv writes, for values its own
// algorithm takes (random ones across [1e-6, 2^24), every float of the decades' and the
// range's edges, negatives) and those it leaves to strconv. GANGBOOST_FTOA_ALL=1 checks every
// float32 in its range instead of a sample (about 3 minutes).
func TestShortestMatchesStrconv(t *testing.T) {
	lo, hi := math.Float32bits(1e-6)-64, math.Float32bits(1<<24)+64
	check := func(f float32) {
		t.Helper()
		got := appendShortest(nil, f)
		if want := strconv.AppendFloat(nil, float64(f), 'f', -1, 32); string(got) != string(want) {
			t.Errorf("%#x: %s, strconv gives %s", math.Float32bits(f), got, want)
		}
	}
	if os.Getenv("GANGBOOST_FTOA_ALL") != "" {
		for b := lo; b <= hi; b++ {
			check(math.Float32frombits(b))
		}
		return
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 300_000 {
		f := math.Float32frombits(lo + rng.Uint32N(hi-lo))
		check(f)
		check(-f)
	}
	for _, edge := range []float32{1e-6, 1e-5, 1e-4, 1e-3, 0.01, 0.1, 1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1 << 23, 1 << 24} {
		b := math.Float32bits(edge)
		for d := range uint32(129) {
			check(math.Float32frombits(b - 64 + d))
		}
	}
	for _, f := range []float32{0, float32(math.Copysign(0, -1)), 0.5, 0.25, 1.0 / 4096, 0.98885334, 0.0071750334, 0.0039716284,
		0.33333334, 1e21, 3.4e38, 1e-7, 1.5e-38} {
		check(f)
		check(-f)
	}
}
