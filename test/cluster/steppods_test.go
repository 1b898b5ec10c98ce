package cluster

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestLogFollower: a step's lines are passed on as the pod runner writes them, whole lines only
// until the end, without the runner's "$ command" and "exit: N" lines.
func TestLogFollower(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ns_pod_main.log")
	var got []string
	f := &logFollower{path: path, out: func(l string) { got = append(got, l) }}
	f.read(false) // not written yet
	write := func(s string) {
		fh, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		if _, err := fh.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	write("$ /bin/launch-xgboostjob --executor-input {}\ncreated job\npods bo")
	f.read(false)
	if want := []string{"created job"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("lines %q, want %q", got, want)
	}
	write("und 2/2\nexit: 0 is not the end\nexit: 0\ntail without newline")
	f.read(true)
	want := []string{"created job", "pods bound 2/2", "exit: 0 is not the end", "tail without newline"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
}

func TestDNSLabel(t *testing.T) {
	for in, want := range map[string]string{"launch-xgboostjob": "launch-xgboostjob", "Train_Iris 2": "train-iris-2", "--": "step"} {
		if got := dnsLabel(in); got != want {
			t.Errorf("dnsLabel(%q) = %q, want %q", in, got, want)
		}
	}
}
