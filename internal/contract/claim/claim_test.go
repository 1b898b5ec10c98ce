package claim

import (
	"path"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckName(t *testing.T) {
	for _, ok := range []string{"gangboost-models", "a", "models.v2", strings.Repeat("a", 253)} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "a/b", "Models", "models\nINFO forged line", "models\u202egnp", "mödels",
		"-a", "a-", "a_b", " a", strings.Repeat("a", 254)} {
		err := CheckName(bad)
		if err == nil {
			t.Errorf("CheckName(%q) accepted", bad)
			continue
		}
		if !strings.Contains(err.Error(), "pvc_name") {
			t.Errorf("CheckName(%q) = %v, want it to name pvc_name", bad, err)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("CheckName(%q): the error holds a raw newline: %q", bad, err)
		}
	}
}

func TestCheckSegment(t *testing.T) {
	for _, ok := range []string{"iris", "v1", "iris-gang", "2024.06.01", "rc_2", "A", strings.Repeat("x", 63)} {
		if err := CheckSegment("model_version", ok); err != nil {
			t.Errorf("CheckSegment(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "...", ".hidden", "-x", "_x", "a/b", "a\\b", "v 1", "v1\n", "v\u202e1", "vé",
		strings.Repeat("x", 64)} {
		if err := CheckSegment("model_version", bad); err == nil || !strings.Contains(err.Error(), "model_version") {
			t.Errorf("CheckSegment(%q) = %v, want an error naming model_version", bad, err)
		}
	}
}

func TestLayout(t *testing.T) {
	if p, err := ModelPath("iris", "v1"); err != nil || p != "models/iris/v1" {
		t.Errorf("ModelPath = %q, %v", p, err)
	}
	if p, err := DatasetPath("iris"); err != nil || p != "datasets/iris" {
		t.Errorf("DatasetPath = %q, %v", p, err)
	}
	// The names that once published a model over models/, over every version of a model, or at
	// the claim's parent.
	for _, c := range [][2]string{{"iris", ".."}, {"iris", "."}, {"..", ".."}, {"iris", ""}, {"", "v1"}, {"a/b", "v1"}} {
		if p, err := ModelPath(c[0], c[1]); err == nil {
			t.Errorf("ModelPath(%q, %q) = %q, want an error", c[0], c[1], p)
		}
		if p, err := CheckpointPath(c[0], c[1]); err == nil {
			t.Errorf("CheckpointPath(%q, %q) = %q, want an error", c[0], c[1], p)
		}
	}
	if p, err := CheckpointPath("iris", "v1"); err != nil || p != "checkpoints/iris/v1" {
		t.Errorf("CheckpointPath = %q, %v", p, err)
	}
	u, err := ModelURI("gangboost-models", "iris", "v1")
	if err != nil || u.String() != "pvc://gangboost-models/models/iris/v1" {
		t.Errorf("ModelURI = %v, %v", u, err)
	}
	if _, err := ModelURI("gangboost-models\n", "iris", "v1"); err == nil {
		t.Error("ModelURI accepted a claim name with a newline")
	}
}

func TestParseURI(t *testing.T) {
	u, err := ParseURI("pvc://gangboost-models/models/iris/v1")
	if err != nil || u.Claim != "gangboost-models" || u.Path != "models/iris/v1" {
		t.Fatalf("ParseURI = %+v, %v", u, err)
	}
	for _, bad := range []string{"", "s3://b/k", "pvc://", "pvc://c", "pvc://c/", "pvc:///x", "pvc://c/../x", "pvc://c/models/iris/..",
		"pvc://c/models/..", "pvc://c/./a", "pvc://c/a//b", "pvc://c/a/", "pvc://c//a", "pvc://../a", "pvc://C/a", "pvc://c\n/a",
		"pvc://c/a\nb", "pvc://c/a\u202eb"} {
		if u, err := ParseURI(bad); err == nil {
			t.Errorf("ParseURI(%q) = %+v, want an error", bad, u)
		}
	}
}

func TestJoin(t *testing.T) {
	root := filepath.Join("/mnt", "pvc")
	for rel, want := range map[string]string{
		"datasets/iris/train.csv": "/mnt/pvc/datasets/iris/train.csv",
		"./a//b/":                 "/mnt/pvc/a/b",
		"a/../b":                  "/mnt/pvc/b",
	} {
		if got, err := Join(root, rel); err != nil || got != filepath.FromSlash(want) {
			t.Errorf("Join(%q) = %q, %v; want %q", rel, got, err, want)
		}
	}
	for _, bad := range []string{"", ".", "..", "../x", "a/../../x", "/etc/passwd", "./.."} {
		if got, err := Join(root, bad); err == nil {
			t.Errorf("Join(%q) = %q, want an error", bad, got)
		}
	}
	if _, err := Join("", "a"); err == nil {
		t.Error("Join without a claim folder accepted")
	}
}

// FuzzParseURI: any string either fails or is a claim name and a clean path of names that stays
// on the claim, which together give the string back; and the path joined under a claim folder
// stays inside it.
func FuzzParseURI(f *testing.F) {
	for _, s := range []string{"pvc://gangboost-models/models/iris/v1", "pvc://c/m", "pvc://c/../x", "pvc:///x", "s3://b/k",
		"pvc://c/a//b/", "pvc://c/./a", "pvc://c/models/iris/..", "pvc://c\n/a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseURI(s)
		if err != nil {
			return
		}
		if CheckName(u.Claim) != nil || u.Path == "" || path.Clean(u.Path) != u.Path || path.IsAbs(u.Path) {
			t.Fatalf("ParseURI(%q) = %+v", s, u)
		}
		for _, seg := range strings.Split(u.Path, "/") {
			if seg == "." || seg == ".." || CheckSegment("seg", seg) != nil {
				t.Fatalf("ParseURI(%q) = %+v: element %q", s, u, seg)
			}
		}
		if u.String() != s {
			t.Fatalf("ParseURI(%q) = %+v, which is %q", s, u, u.String())
		}
		root := "/mnt/pvc"
		p, err := Join(root, u.Path)
		if err != nil || !strings.HasPrefix(p, root+"/") {
			t.Fatalf("Join(%q, %q) = %q, %v", root, u.Path, p, err)
		}
	})
}
