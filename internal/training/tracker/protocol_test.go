package tracker

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// rw is a scripted connection: reads come from in, writes go to out.
type rw struct {
	in  io.Reader
	out bytes.Buffer
}

func (c *rw) Read(p []byte) (int, error)  { return c.in.Read(p) }
func (c *rw) Write(p []byte) (int, error) { return c.out.Write(p) }

func helloBytes(rank, world int, taskID, cmd string) []byte {
	b := appendInt(nil, magic)
	b = appendInt(b, rank)
	b = appendInt(b, world)
	b = appendString(b, taskID)
	return appendString(b, cmd)
}

func TestReadHello(t *testing.T) {
	tests := []struct {
		name    string
		in      []byte
		want    hello
		wantErr string
	}{
		{"start", helloBytes(-1, -1, "NULL", "start"), hello{-1, -1, "NULL", "start"}, ""},
		{"shutdown", helloBytes(3, 4, "3", "shutdown"), hello{3, 4, "3", "shutdown"}, ""},
		{"bad magic", []byte("GET / HTTP/1.1\r\n"), hello{}, "bad magic number"},
		{"truncated", helloBytes(0, 1, "0", "start")[:14], hello{}, "read task id"},
		{"huge task id", append(appendInt(appendInt(appendInt(nil, magic), 0), 1), 0xff, 0xff, 0xff, 0x7f), hello{}, "string length 2147483647"},
		{"negative length", append(appendInt(appendInt(appendInt(nil, magic), 0), 1), 0xff, 0xff, 0xff, 0xff), hello{}, "string length -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &rw{in: bytes.NewReader(tt.in)}
			got, err := readHello(c)
			if tt.wantErr != "" {
				if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tt.wantErr)) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("hello = %+v, want %+v", got, tt.want)
			}
			// The magic is echoed, little-endian, and nothing else is sent.
			if !bytes.Equal(c.out.Bytes(), []byte{0x99, 0xff, 0, 0}) {
				t.Errorf("tracker wrote % x, want the magic 99 ff 00 00", c.out.Bytes())
			}
		})
	}
}

func TestSendAssignment(t *testing.T) {
	var b bytes.Buffer
	// n=1: ring links pointing at the worker itself go out as -1.
	if err := sendAssignment(&b, 0, newTopology(1)); err != nil {
		t.Fatal(err)
	}
	got, err := readInts(&b, 6)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{0, -1, 1, 0, -1, -1}; !equalInts(got, want) {
		t.Errorf("n=1 assignment %v, want %v", got, want)
	}
	b.Reset()
	// n=4, rank 1: parent 0, tree {0, 2}, ring 0/2.
	if err := sendAssignment(&b, 1, newTopology(4)); err != nil {
		t.Fatal(err)
	}
	got, err = readInts(&b, 8)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 0, 4, 2, 0, 2, 0, 2}; !equalInts(got, want) {
		t.Errorf("n=4 rank 1 assignment %v, want %v", got, want)
	}
	if b.Len() != 0 {
		t.Errorf("%d bytes left over", b.Len())
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzReadHello feeds arbitrary bytes to the hello parser, which reads from
// anything that connects to the tracker port: it must return, never panic,
// and never accept a hello without the magic.
func FuzzReadHello(f *testing.F) {
	f.Add(helloBytes(-1, -1, "NULL", "start"))
	f.Add(helloBytes(2, 3, "2", "print"))
	f.Add([]byte{0x99, 0xff, 0, 0, 0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, in []byte) {
		h, err := readHello(&rw{in: bytes.NewReader(in)})
		if err != nil {
			if errors.Is(err, errBadMagic) && len(in) >= 4 && bytes.Equal(in[:4], []byte{0x99, 0xff, 0, 0}) {
				t.Fatalf("rejected the right magic: %v", err)
			}
			return
		}
		if !bytes.Equal(in[:4], []byte{0x99, 0xff, 0, 0}) {
			t.Fatalf("accepted hello without magic: %+v", h)
		}
		if len(h.taskID) > maxTaskIDLen || len(h.cmd) > maxCommandLen {
			t.Fatalf("accepted oversized strings: %d, %d", len(h.taskID), len(h.cmd))
		}
	})
}
