package v2

import (
	"encoding/json"
	"testing"
)

// Parameters.Int reads what encoding/json reads into an int64, and refuses what it refuses,
// with or without its allocation-free path.
func TestParametersIntAgreesWithEncodingJSON(t *testing.T) {
	for _, raw := range []string{"0", "16", "-16", "123456789012345678", "9223372036854775807", "-9223372036854775808",
		"9223372036854775808", "016", "-0", "-", "1.0", "1e3", `"16"`, "true", "null", "99999999999999999999"} {
		got, present, err := Parameters{"n": json.RawMessage(raw)}.Int("n")
		var want int64
		werr := json.Unmarshal([]byte(raw), &want)
		if !present || (err == nil) != (werr == nil) || (err == nil && got != want) {
			t.Errorf("%s: got %d, %v; encoding/json %d, %v", raw, got, err, want, werr)
		}
	}
	if _, present, err := (Parameters{}).Int("n"); present || err != nil {
		t.Errorf("absent parameter: present %v, error %v", present, err)
	}
}
