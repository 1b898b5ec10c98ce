package dataset

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A reader that says how much it holds gets a buffer of that size (at least 4 KiB), one that
// does not, or holds more than a megabyte, gets the megabyte.
func TestReadBufferBytesFollowsWhatTheReaderHolds(t *testing.T) {
	dir := t.TempDir()
	small, large := filepath.Join(dir, "small.csv"), filepath.Join(dir, "large.csv")
	if err := os.WriteFile(small, make([]byte, 10_000), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(large, make([]byte, 3<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	open := func(path string) *os.File {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	pr, pw := io.Pipe()
	defer pw.Close()
	for _, c := range []struct {
		name string
		r    io.Reader
		want int
	}{
		{"bytes.Reader of 100 bytes", bytes.NewReader(make([]byte, 100)), 4 << 10},
		{"strings.Reader of 10000 bytes", strings.NewReader(strings.Repeat("x", 10_000)), 10_001},
		{"file of 10000 bytes", open(small), 10_001},
		{"file of 3 MiB", open(large), maxReadBufferBytes},
		{"bytes.Reader of 2 MiB", bytes.NewReader(make([]byte, 2<<20)), maxReadBufferBytes},
		{"pipe", pr, maxReadBufferBytes},
	} {
		if got := readBufferBytes(c.r); got != c.want {
			t.Errorf("%s: %d bytes, want %d", c.name, got, c.want)
		}
	}
}

// A line longer than a small file's buffer is still read whole: the buffer bounds a read, not
// a line (a file that grew after its size was taken).
func TestLineLongerThanTheBufferOfASmallFile(t *testing.T) {
	long := strings.Repeat("1,", 5000) + "0\n"
	header := "label" + strings.Repeat(",f", 5000) + "\n"
	cr := newRecordReader(strings.NewReader("label\n")) // sized for one short line: 4 KiB
	cr.br.Reset(strings.NewReader(header + long))       // then 20 KB came
	if cr.br.Size() >= len(long) {
		t.Fatalf("the buffer holds %d bytes, not less than a line (%d)", cr.br.Size(), len(long))
	}
	for i, want := range []int{5001, 5001} {
		rec, err := cr.read()
		if err != nil || len(rec) != want {
			t.Fatalf("record %d: %d fields, %v; want %d", i, len(rec), err, want)
		}
	}
}

// Chunks start small and double; reserve moves the values so far into one piece, which flatten
// then returns as it is.
func TestChunkedGrowsAndReserves(t *testing.T) {
	var c chunked[int32]
	for i := range 5000 {
		c.append(int32(i))
	}
	if got := []int{cap(c.full[0]), cap(c.full[1]), cap(c.cur)}; !slices.Equal(got, []int{minChunk, 2 * minChunk, 4 * minChunk}) {
		t.Fatalf("chunk sizes %v, want %d doubling", got, minChunk)
	}
	c.reserve(100_000)
	if len(c.full) != 0 || cap(c.cur) != 100_000 || c.n != 5000 {
		t.Fatalf("after reserve: %d full chunks, room for %d, %d values", len(c.full), cap(c.cur), c.n)
	}
	copy(c.extend(3), []int32{5000, 5001, 5002})
	out := c.flatten()
	if len(out) != 5003 || &out[0] != &c.cur[0] {
		t.Fatalf("flatten: %d values, copied: %v", len(out), &out[0] != &c.cur[0])
	}
	for i, v := range out {
		if v != int32(i) {
			t.Fatalf("value %d is %d", i, v)
		}
	}
	c.reserve(10) // fewer than it holds: nothing moves
	if cap(c.cur) != 100_000 {
		t.Fatalf("a smaller reserve changed the chunk: room for %d", cap(c.cur))
	}
}
