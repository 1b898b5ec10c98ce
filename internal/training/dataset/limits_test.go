package dataset

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
)

// Input that would take more memory than the limits allow fails while it is read, naming the file,
// the line and the flag to change, on every rank.
func TestLimits(t *testing.T) {
	longCell := "0." + strings.Repeat("7", 98) // a number, 100 bytes long
	tests := []struct {
		name   string
		format string
		data   string
		limits Limits
		want   string
	}{
		{name: "csv line", format: "csv", limits: Limits{MaxLineBytes: 64},
			data: "a,y\n1,0\n" + longCell + ",1\n",
			want: "x.csv:3: the line is longer than 64 bytes (--max-line-bytes)"},
		{name: "csv header", format: "csv", limits: Limits{MaxLineBytes: 64},
			data: strings.Repeat("col,", 20) + "y\n1,0\n",
			want: "x.csv:1: the line is longer than 64 bytes"},
		{name: "csv quoted field over lines", format: "csv", limits: Limits{MaxLineBytes: 64},
			data: "a,y\n1,\"" + strings.Repeat("x\n", 40) + "\"\n",
			want: "x.csv:2: the line is longer than 64 bytes"},
		{name: "a long bad cell is quoted short", format: "csv",
			data: "a,y\n" + strings.Repeat("x", 5000) + ",1\n",
			want: `x.csv:2: column 1 "a": "` + strings.Repeat("x", 64) + `"... (5000 bytes) is not a number`},
		{name: "csv line just fits", format: "csv", limits: Limits{MaxLineBytes: 102},
			data: "a,y\n" + longCell + ",1\n" + longCell + ",0\n" + longCell + ",1\n"},
		{name: "libsvm line", format: "libsvm", limits: Limits{MaxLineBytes: 64},
			data: "1 0:1\n0 " + strings.Repeat("1:2 ", 30) + "\n",
			want: "x.libsvm:2: the line is longer than 64 bytes (--max-line-bytes)"},
		{name: "csv matrix", format: "csv", limits: Limits{MaxMatrixBytes: 3 * 2 * 4},
			data: "a,b,y\n1,2,0\n3,4,1\n5,6,0\n7,8,1\n9,10,0\n11,12,1\n13,14,0\n15,16,1\n17,18,0\n19,20,1\n21,22,0\n23,24,1\n",
			want: "rows need a dense matrix of at least 4 rows x 2 features x 4 bytes = 32 B, more than --max-matrix-bytes 24 B"},
		{name: "libsvm stray index", format: "libsvm", limits: Limits{MaxMatrixBytes: 1 << 30},
			data: strings.Repeat("1 16777215:1\n", 100),
			want: "at least 17 rows x 16777216 features x 4 bytes = 1.1 GiB, more than --max-matrix-bytes 1 GiB (reached at line "},
	}
	for _, tt := range tests {
		for rank := range 3 {
			t.Run(fmt.Sprintf("%s/rank %d", tt.name, rank), func(t *testing.T) {
				file := "x." + tt.format
				var err error
				if tt.format == "csv" {
					_, err = loadCSVReader(strings.NewReader(tt.data), file, csvOptions{label: "y", limits: tt.limits}, Shard{rank, 3})
				} else {
					_, err = loadLibSVMReader(strings.NewReader(tt.data), file, 0, tt.limits, Shard{rank, 3})
				}
				switch {
				case tt.want == "" && err != nil:
					t.Fatalf("unexpected error %v", err)
				case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
					t.Fatalf("error %v\nwant %q", err, tt.want)
				}
			})
		}
	}
}

// The 18 KB file with feature index 2^24-1 would need a 2300 x 2^24 dense matrix (144 GiB): it
// fails before the allocation, and holds little memory while it is read.
func TestStrayIndexFailsBeforeAllocating(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := Load(Spec{Path: td("wide_index.libsvm"), Limits: Limits{MaxMatrixBytes: 8 << 30}}, Shard{})
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "--max-matrix-bytes 8 GiB") || !strings.Contains(err.Error(), "largest index so far is 16777215") {
		t.Fatalf("error %v, want the matrix bound naming the stray index", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Fatalf("loading allocated %d MiB before failing", alloc>>20)
	}
}

// endless is a reader of n bytes without a line break, as /dev/zero or a binary file named
// .csv gives; n bounds the test if the reader were not bounded.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), e.n)
	clear(p[:k])
	e.n -= k
	return int(k), nil
}

func TestNoLineBreakStopsAtTheLineBound(t *testing.T) {
	for _, format := range []string{"csv", "libsvm"} {
		t.Run(format, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			r := &endless{n: 1 << 30}
			var err error
			if format == "csv" {
				_, err = loadCSVReader(r, "zero", csvOptions{label: "y"}, Shard{})
			} else {
				_, err = loadLibSVMReader(r, "zero", 0, Limits{}, Shard{})
			}
			runtime.ReadMemStats(&after)
			want := fmt.Sprintf("zero:1: the line is longer than %d bytes (--max-line-bytes)", DefaultMaxLineBytes)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("error %v, want %q", err, want)
			}
			if read := 1<<30 - r.n; read > 2*DefaultMaxLineBytes {
				t.Fatalf("read %d MiB of one line before giving up", read>>20)
			}
			// The line is assembled by appending: the buffers it outgrows add up to about as much
			// again as the last one, which may be twice the bound.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 6*DefaultMaxLineBytes {
				t.Fatalf("allocated %d MiB for a line bounded at %d MiB", alloc>>20, DefaultMaxLineBytes>>20)
			}
		})
	}
}
