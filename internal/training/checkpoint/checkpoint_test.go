package checkpoint

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func state(round int) *State {
	settings := map[string]string{"eta": "0.3", "data_sha256": "abc", "world_size": "3"}
	return &State{Round: round, Settings: settings, Fingerprint: Fingerprint(settings),
		Metrics: map[string][]float64{"train-rmse": make([]float64, round)}, Model: []byte(strings.Repeat("m", 100+round))}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// TestWriteKeepsTheNewest: each write leaves the newest Keep checkpoints and no temporary file;
// Latest reads the newest back whole.
func TestWriteKeepsTheNewest(t *testing.T) {
	d := Dir{Path: filepath.Join(t.TempDir(), "checkpoints", "iris", "v1"), Keep: 2}
	for _, r := range []int{10, 20, 30, 40} {
		w, err := d.Write(state(r))
		if err != nil {
			t.Fatal(err)
		}
		if w.Path != filepath.Join(d.Path, FileName(r)) || w.Bytes <= 100+r {
			t.Errorf("write of round %d = %+v", r, w)
		}
	}
	if got, want := names(t, d.Path), []string{"round-000030.ckpt", "round-000040.ckpt"}; !slices.Equal(got, want) {
		t.Errorf("folder holds %v, want %v", got, want)
	}
	f, err := d.Latest()
	if err != nil {
		t.Fatal(err)
	}
	if f.State == nil || f.State.Round != 40 || string(f.State.Model) != string(state(40).Model) || len(f.State.Metrics["train-rmse"]) != 40 || len(f.Skipped) != 0 {
		t.Fatalf("Latest = %+v", f)
	}
}

// TestDamagedNewestIsPassedOver: a newest file cut short (as a write without rename would leave
// it), or changed, is not used: the one before it is, and the reason is given.
func TestDamagedNewestIsPassedOver(t *testing.T) {
	for name, damage := range map[string]func([]byte) []byte{
		"cut short":      func(b []byte) []byte { return b[:len(b)-7] },
		"header only":    func(b []byte) []byte { return b[:len(magic)+10] },
		"model changed":  func(b []byte) []byte { b[len(b)-1] ^= 1; return b },
		"not ours":       func([]byte) []byte { return []byte("PK\x03\x04 a zip file") },
		"empty":          func([]byte) []byte { return nil },
		"header changed": func(b []byte) []byte { return []byte(strings.Replace(string(b), `"eta":"0.3"`, `"eta":"0.4"`, 1)) },
	} {
		t.Run(name, func(t *testing.T) {
			d := Dir{Path: t.TempDir(), Keep: 5}
			for _, r := range []int{5, 10} {
				if _, err := d.Write(state(r)); err != nil {
					t.Fatal(err)
				}
			}
			p := filepath.Join(d.Path, FileName(10))
			b, _ := os.ReadFile(p)
			if err := os.WriteFile(p, damage(b), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := d.Latest()
			if err != nil {
				t.Fatal(err)
			}
			if f.State == nil || f.State.Round != 5 {
				t.Fatalf("Latest used %+v, want round 5", f.State)
			}
			if len(f.Skipped) != 1 || f.Skipped[0].Path != p || f.Skipped[0].Reason == "" {
				t.Fatalf("skipped = %v, want %s with a reason", f.Skipped, p)
			}
			t.Logf("%s: %s", name, f.Skipped[0])
		})
	}
}

// TestTemporaryFilesAreNeverRead: a writer killed before its rename leaves a .tmp file; it is not
// a checkpoint, and the next write removes it.
func TestTemporaryFilesAreNeverRead(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	b, err := Encode(state(50))
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(d.Path, "."+FileName(50)+".tmp-123")
	if err := os.WriteFile(tmp, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := d.Latest()
	if err != nil || f.State != nil || len(f.Skipped) != 0 {
		t.Fatalf("Latest = %+v, %v; want nothing found", f, err)
	}
	if _, err := d.Write(state(60)); err != nil {
		t.Fatal(err)
	}
	if got := names(t, d.Path); !slices.Equal(got, []string{FileName(60)}) {
		t.Errorf("after a write the folder holds %v", got)
	}
}

func TestMissingFolderHasNoCheckpoint(t *testing.T) {
	f, err := Dir{Path: filepath.Join(t.TempDir(), "none")}.Latest()
	if err != nil || f.State != nil {
		t.Fatalf("Latest = %+v, %v", f, err)
	}
}

func TestDifferences(t *testing.T) {
	a := map[string]string{"eta": "0.3", "max_depth": "6", "gone": "x"}
	b := map[string]string{"eta": "0.1", "max_depth": "6", "new": "y"}
	got := strings.Join(Differences(a, b, 5), "; ")
	want := `eta "0.3" (now "0.1"); gone "x" (now unset); new unset (now "y")`
	if got != want {
		t.Errorf("Differences = %s, want %s", got, want)
	}
	if Fingerprint(a) == Fingerprint(b) || Fingerprint(a) != Fingerprint(map[string]string{"gone": "x", "max_depth": "6", "eta": "0.3"}) {
		t.Error("fingerprint does not follow the settings")
	}
	// Keys and values cannot run into each other.
	if Fingerprint(map[string]string{"a": "b=c"}) == Fingerprint(map[string]string{"a=b": "c"}) {
		t.Error("different settings, same fingerprint")
	}
}

// TestRemoveLeavesForeignFiles: after a published model the folder goes, unless someone put
// something else in it.
func TestRemoveLeavesForeignFiles(t *testing.T) {
	d := Dir{Path: filepath.Join(t.TempDir(), "v1")}
	if _, err := d.Write(state(3)); err != nil {
		t.Fatal(err)
	}
	if err := d.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.Path); !os.IsNotExist(err) {
		t.Fatalf("folder still there: %v", err)
	}
	if _, err := d.Write(state(3)); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(d.Path, "notes.txt"), []byte("mine"), 0o644)
	if err := d.Remove(); err == nil || !strings.Contains(err.Error(), "notes.txt") {
		t.Fatalf("Remove = %v, want a refusal naming notes.txt", err)
	}
	if _, err := os.Stat(filepath.Join(d.Path, "notes.txt")); err != nil {
		t.Fatal(err)
	}
}
