package ci

import "testing"

func TestRunning(t *testing.T) {
	for v, want := range map[string]bool{
		"1": true, "true": true, "TRUE": true, "True": true, "yes": true, "Yes": true, "on": true, " true\n": true,
		"": false, "0": false, "false": false, "no": false, "off": false, "maybe": false,
	} {
		t.Setenv("CI", v)
		if got := Running(); got != want {
			t.Errorf("CI=%q: Running() = %v, want %v", v, got, want)
		}
	}
}
