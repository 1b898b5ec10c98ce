package dataset

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
)

// readAllStd reads records with encoding/csv, the reference recordReader must match.
func readAllStd(data []byte) (records [][]string, lines [][]int, err error) {
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = -1
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return records, lines, nil
		}
		if err != nil {
			return records, lines, err
		}
		var l []int
		for i := range rec {
			line, _ := cr.FieldPos(i)
			l = append(l, line)
		}
		records, lines = append(records, rec), append(lines, l)
	}
}

func readAllOurs(data []byte, bufSize int) (records [][]string, lines [][]int, err error) {
	r := newRecordReader(bytes.NewReader(data))
	if bufSize > 0 {
		r.br = bufio.NewReaderSize(bytes.NewReader(data), bufSize)
	}
	for {
		rec, err := r.read()
		if errors.Is(err, io.EOF) {
			return records, lines, nil
		}
		if err != nil {
			return records, lines, err
		}
		var s []string
		var l []int
		for i, f := range rec {
			s = append(s, string(f))
			l = append(l, r.fieldLine(i))
		}
		records, lines = append(records, s), append(lines, l)
	}
}

func checkSameAsStd(t *testing.T, data []byte) {
	t.Helper()
	wantRec, wantLines, wantErr := readAllStd(data)
	for _, size := range []int{0, 16} { // 16: lines longer than the read buffer
		gotRec, gotLines, gotErr := readAllOurs(data, size)
		if (gotErr != nil) != (wantErr != nil) {
			t.Fatalf("buffer %d, input %q:\nerror %v, encoding/csv: %v", size, data, gotErr, wantErr)
		}
		if !slices.EqualFunc(gotRec, wantRec, slices.Equal) || !slices.EqualFunc(gotLines, wantLines, slices.Equal) {
			t.Fatalf("buffer %d, input %q:\n got %q lines %v\nwant %q lines %v", size, data, gotRec, gotLines, wantRec, wantLines)
		}
	}
}

func TestRecordReaderMatchesEncodingCSV(t *testing.T) {
	inputs := []string{
		"", "\n", "\r\n", "a", "a\n", "a\r", "a\r\n", "a,b\nc,d", "a,b\n\n\nc,d\n", "a,,b,\n",
		"\"a\",\"b,c\"\n", "\"a\"\"b\"\n", "\"multi\nline\",x\ny,z\n", "\"multi\r\nline\"\r\n",
		"a\"b,c\n", "\"a\"b,c\n", "\"never closed\n", "\"never closed", "x,\"\"\n", " \"a\",b\n",
		"a,b\r\nc\rd,e\r\n", "\"a\"\r\n\"b\"", "\"\"\"\"\n", "\"ab\"\r", "a,\"b\nc\nd\",e\nf\n",
	}
	for _, in := range inputs {
		checkSameAsStd(t, []byte(in))
	}
	for _, name := range []string{"flowers.csv", "bad_quote.csv", "ragged.csv"} {
		raw, _ := os.ReadFile(td(name))
		checkSameAsStd(t, raw)
	}
	checkSameAsStd(t, []byte(strings.Repeat("123456789,", 50)+"\n\"long quoted "+strings.Repeat("q", 100)+"\"\n"))
}

func FuzzRecordReader(f *testing.F) {
	for _, in := range []string{"a,b\nc,d\n", "\"a\n\"\"b\",c\r\n", "x\"y", "\"a\"b"} {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSameAsStd(t, data)
	})
}
