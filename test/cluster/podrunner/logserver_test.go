package podrunner

import "testing"

func TestContainerRun(t *testing.T) {
	log := []byte("$ /bin/x --a\none\ntwo\nexit: 1\n$ /bin/x --a\nthree\nfour\nfive\n")
	if got, ok := containerRun(log, false); !ok || string(got) != "three\nfour\nfive\n" {
		t.Errorf("last run %q %v", got, ok)
	}
	if got, ok := containerRun(log, true); !ok || string(got) != "one\ntwo\n" {
		t.Errorf("previous run %q %v", got, ok)
	}
	if _, ok := containerRun([]byte("$ /bin/x\nonly\nexit: 0\n"), true); ok {
		t.Error("previous of a container that never restarted")
	}
	if got := tailLines([]byte("three\nfour\nfive\n"), 2); string(got) != "four\nfive\n" {
		t.Errorf("tailLines 2 = %q", got)
	}
	if got := tailLines([]byte("a\nb\n"), 5); string(got) != "a\nb\n" {
		t.Errorf("tailLines beyond = %q", got)
	}
	if got := tailLines([]byte("a\nb\n"), 0); len(got) != 0 {
		t.Errorf("tailLines 0 = %q", got)
	}
}
