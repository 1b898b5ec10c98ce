package dataset

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// recordReader splits CSV text into records as encoding/csv does without LazyQuotes (RFC 4180:
// fields separated by commas, optionally enclosed in double quotes, "" for a quote inside a
// quoted field, quoted fields may span lines, \r\n read as \n, empty lines skipped) but without
// allocating per record: a record without quotes points straight into the read buffer. It splits
// a large CSV about three times as fast as encoding/csv (BenchmarkSplitRecords); a differential
// fuzz test holds the two equal.
type recordReader struct {
	br *bufio.Reader
	// data, when br is nil, is the text in memory (whole lines: a block of a parallel read), read
	// from pos on.
	data   []byte
	pos    int
	line   int      // lines read so far
	fields [][]byte // the current record; valid until the next read
	starts []int    // the line on which each field of the current record starts
	long   []byte   // a line longer than br's buffer
	buf    []byte   // unquoted text of a record with quotes
	ends   []int    // field ends in buf
	// maxLine bounds a line and a record (0: DefaultMaxLineBytes); a longer one is errLineTooLong
	// with tooLongAt its line, found before more than maxLine bytes are held.
	maxLine   int
	tooLongAt int
	// spanned says that a quoted field went on past the end of a line. A parallel read, whose
	// blocks end at line ends, cannot parse such a record and reads the input sequentially.
	spanned bool
}

// csvSyntaxError is malformed quoting.
type csvSyntaxError struct {
	line  int // where the record starts
	field int // 0-based
	msg   string
}

func (e *csvSyntaxError) Error() string {
	return fmt.Sprintf("line %d, field %d: %s", e.line, e.field+1, e.msg)
}

func newRecordReader(r io.Reader) *recordReader {
	return &recordReader{br: bufio.NewReaderSize(r, readBufferBytes(r))}
}

func (r *recordReader) limit() int {
	if r.maxLine <= 0 {
		return DefaultMaxLineBytes
	}
	return r.maxLine
}

// reset makes r read data, whose first line is line after+1.
func (r *recordReader) reset(data []byte, after int) {
	r.data, r.pos, r.line, r.spanned = data, 0, after, false
}

// readLine returns the next line including its \n (if any), or io.EOF when no data is left.
func (r *recordReader) readLine() ([]byte, error) {
	var line []byte
	var err error
	if r.br == nil {
		rest := r.data[r.pos:]
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		} else {
			line, err = rest, io.EOF
		}
		r.pos += len(line)
	} else {
		line, err = readLongLine(r.br, &r.long, r.limit())
	}
	if errors.Is(err, errLineTooLong) || len(bytes.TrimRight(line, "\r\n")) > r.limit() {
		r.tooLongAt = r.line + 1
		return nil, errLineTooLong
	}
	if len(line) > 0 {
		r.line++
		if errors.Is(err, io.EOF) {
			err = nil
			// encoding/csv drops a \r that ends a file without a final newline.
			if line[len(line)-1] == '\r' {
				line = line[:len(line)-1]
			}
		}
	}
	if n := len(line); n >= 2 && line[n-2] == '\r' && line[n-1] == '\n' {
		line[n-2] = '\n'
		line = line[:n-1]
	}
	return line, err
}

// read returns the next record, whose fields stay valid until the next call, or io.EOF.
func (r *recordReader) read() ([][]byte, error) {
	line, err := r.nextLine()
	if err != nil {
		return nil, err
	}
	return r.record(line)
}

// nextLine returns the next line that is not empty (a record's first line), or io.EOF. A caller
// that can parse the line itself (csvColumns.fastRow) saves splitting it into fields.
func (r *recordReader) nextLine() ([]byte, error) {
	for {
		line, err := r.readLine()
		if err != nil {
			return nil, err // io.EOF only once no data is left
		}
		if len(line) == 0 {
			return nil, io.EOF // the file ended in a lone \r
		}
		if !(len(line) == 1 && line[0] == '\n') {
			return line, nil
		}
	}
}

// record splits the record whose first line nextLine returned into fields, which stay valid
// until the next read.
func (r *recordReader) record(line []byte) ([][]byte, error) {
	if bytes.IndexByte(line, '"') >= 0 {
		return r.readQuoted(line)
	}
	if line[len(line)-1] == '\n' {
		line = line[:len(line)-1]
	}
	r.fields, r.starts = r.fields[:0], r.starts[:0]
	for {
		i := bytes.IndexByte(line, ',')
		if i < 0 {
			r.fields = append(r.fields, line)
			r.starts = append(r.starts, r.line)
			return r.fields, nil
		}
		r.fields = append(r.fields, line[:i])
		r.starts = append(r.starts, r.line)
		line = line[i+1:]
	}
}

// readQuoted parses a record that contains quotes, reading more lines while a quoted field
// spans them. It follows encoding/csv's readRecord.
func (r *recordReader) readQuoted(line []byte) ([][]byte, error) {
	r.buf, r.ends, r.starts = r.buf[:0], r.ends[:0], r.starts[:0]
	recordLine := r.line
	lengthNL := func(b []byte) int {
		if len(b) > 0 && b[len(b)-1] == '\n' {
			return 1
		}
		return 0
	}
parseField:
	for {
		field := len(r.ends)
		r.starts = append(r.starts, r.line)
		if len(line) == 0 || line[0] != '"' {
			i := bytes.IndexByte(line, ',')
			text := line
			if i >= 0 {
				text = text[:i]
			} else {
				text = text[:len(text)-lengthNL(text)]
			}
			if bytes.IndexByte(text, '"') >= 0 {
				return nil, &csvSyntaxError{line: recordLine, field: field,
					msg: `a quote inside a field that does not start with one (enclose the field in quotes and double the inner quote)`}
			}
			r.buf = append(r.buf, text...)
			r.ends = append(r.ends, len(r.buf))
			if i >= 0 {
				line = line[i+1:]
				continue parseField
			}
			break parseField
		}
		line = line[1:]
		for {
			i := bytes.IndexByte(line, '"')
			switch {
			case i >= 0:
				r.buf = append(r.buf, line[:i]...)
				line = line[i+1:]
				switch {
				case len(line) > 0 && line[0] == '"': // "" inside quotes
					r.buf = append(r.buf, '"')
					line = line[1:]
				case len(line) > 0 && line[0] == ',':
					line = line[1:]
					r.ends = append(r.ends, len(r.buf))
					continue parseField
				case lengthNL(line) == len(line):
					r.ends = append(r.ends, len(r.buf))
					break parseField
				default:
					return nil, &csvSyntaxError{line: recordLine, field: field,
						msg: `a quoted field must end with a quote followed by a comma or the end of the line`}
				}
			case len(line) > 0:
				// The quoted field goes on on the next line. Its text is copied first: the next
				// read may overwrite the buffer line points into.
				r.spanned = true
				r.buf = append(r.buf, line...)
				if len(r.buf) > r.limit() {
					r.tooLongAt = recordLine
					return nil, errLineTooLong
				}
				var err error
				line, err = r.readLine()
				if err != nil && !errors.Is(err, io.EOF) {
					return nil, err
				}
				if len(line) == 0 {
					return nil, &csvSyntaxError{line: recordLine, field: field, msg: `the quoted field starting here is never closed`}
				}
			default:
				return nil, &csvSyntaxError{line: recordLine, field: field, msg: `the quoted field starting here is never closed`}
			}
		}
	}
	r.fields = r.fields[:0]
	start := 0
	for _, end := range r.ends {
		r.fields = append(r.fields, r.buf[start:end])
		start = end
	}
	return r.fields, nil
}

// fieldLine is the line on which field i of the current record starts.
func (r *recordReader) fieldLine(i int) int { return r.starts[i] }
