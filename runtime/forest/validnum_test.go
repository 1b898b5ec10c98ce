package forest

import "testing"

func TestValidNumber(t *testing.T) {
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"0", true}, {"-0", true}, {"5E-1", true}, {"1.5e+10", true}, {"-2.25", true}, {"123", true},
		{"NaN", true}, {"-NaN", true}, {"Infinity", true}, {"-Infinity", true}, {"+Infinity", true}, {"inf", true},
		{"01", false}, {"1.", false}, {".5", false}, {"1e", false}, {"+1", false}, {"--1", false},
		{"1x", false}, {"0x10", false}, {"1_0", false}, {"Nan1", false}, {"-", false}, {"e5", false},
	} {
		if got := validNumber([]byte(tc.in)); got != tc.ok {
			t.Errorf("validNumber(%q) = %v, want %v", tc.in, got, tc.ok)
		}
	}
}
