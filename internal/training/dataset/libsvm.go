package dataset

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unsafe"
)

// maxLibSVMIndex bounds feature indices: the matrix is dense, so a stray huge index would
// otherwise allocate rows x index floats.
const maxLibSVMIndex = 1<<24 - 1

// LoadLibSVM reads a LibSVM / SVMlight text file ("<label> [qid:<n>] <index>:<value> ...", # starts
// a comment), validates every line and keeps shard s's rows. Indices are taken as they are
// (0-based, as XGBoost reads LibSVM), so Cols is the largest index in the whole file + 1 and equal
// on every rank. Features absent from a row are missing (NaN), as XGBoost treats sparse entries.
// A name ending in .gz is read through gzip.
func LoadLibSVM(path string, s Shard) (*Matrix, error) {
	return loadLibSVMFile(path, 0, Limits{}, s)
}

func loadLibSVMFile(path string, numFeatures int, limits Limits, s Shard) (*Matrix, error) {
	f, err := openData(path)
	if err != nil {
		return nil, fmt.Errorf("open data: %w", err)
	}
	defer f.Close()
	return loadLibSVMReader(f, path, numFeatures, limits, s)
}

func loadLibSVMReader(r io.Reader, file string, numFeatures int, limits Limits, s Shard) (*Matrix, error) {
	s, err := s.normalize()
	if err != nil {
		return nil, err
	}
	if numFeatures > maxLibSVMIndex+1 {
		return nil, fmt.Errorf("libsvm: %d features: at most %d supported", numFeatures, maxLibSVMIndex+1)
	}
	br := bufio.NewReaderSize(r, readBufferBytes(r))
	// Own rows are kept sparse until the whole file has been seen and Cols is known.
	var (
		rowEnds  chunked[int]
		indices  chunked[int32]
		values   chunked[float32]
		labels   chunked[float32]
		maxIndex = -1
		lineNo   int
		row      int
		long     []byte
		lineIdx  []int32 // the feature indices of the current line
		labelMin = math.Inf(1)
		labelMax = math.Inf(-1)
	)
	for {
		line, err := readLongLine(br, &long, limits.maxLine())
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte{'\n'}), []byte{'\r'})
		if errors.Is(err, errLineTooLong) {
			return nil, lineTooLongError(file, lineNo+1, limits.maxLine())
		}
		if len(line) == 0 && errors.Is(err, io.EOF) {
			break
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read %s: %w", file, err)
		}
		lineNo++
		if i := bytes.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		tok, rest := nextToken(line)
		if len(tok) == 0 {
			continue // blank or comment line
		}
		label32, perr := parseFloat32(bytesString(tok))
		label := float64(label32)
		if perr != nil || math.IsNaN(label) || math.IsInf(label, 0) {
			return nil, &DataError{File: file, Line: lineNo, Msg: fmt.Sprintf("token 1 %s: the label is not a number", quoteClip(bytesString(tok)))}
		}
		labelMin, labelMax = min(labelMin, label), max(labelMax, label)
		own := s.owns(row)
		lineIdx = lineIdx[:0]
		for k := 2; ; k++ {
			tok, rest = nextToken(rest)
			if len(tok) == 0 {
				break
			}
			colon := bytes.IndexByte(tok, ':')
			if colon < 0 {
				return nil, &DataError{File: file, Line: lineNo, Msg: fmt.Sprintf("token %d %s: want index:value", k, quoteClip(bytesString(tok)))}
			}
			if k == 2 && string(tok[:colon]) == "qid" {
				continue // ranking group id; groups are not used for training here
			}
			idx, ok := parseIndex(tok[:colon])
			if !ok {
				return nil, &DataError{File: file, Line: lineNo, Msg: fmt.Sprintf("token %d %q: index %q is not a whole number in [0, %d]",
					k, tok, tok[:colon], maxLibSVMIndex)}
			}
			if numFeatures > 0 && idx >= numFeatures {
				return nil, &DataError{File: file, Line: lineNo, Msg: fmt.Sprintf("token %d %q: index %d is beyond the %d features of the training data",
					k, tok, idx, numFeatures)}
			}
			v, bad := parseCell(bytesString(tok[colon+1:]))
			if bad != "" {
				return nil, &DataError{File: file, Line: lineNo, Msg: fmt.Sprintf("token %d %s: value %s %s", k, quoteClip(bytesString(tok)), quoteClip(bytesString(tok[colon+1:])), bad)}
			}
			maxIndex = max(maxIndex, idx)
			lineIdx = append(lineIdx, int32(idx))
			if own {
				indices.append(int32(idx))
				values.append(v)
			}
		}
		if own {
			labels.append(float32(label))
			rowEnds.append(indices.n)
			// The rows are sparse until the end, but become dense: fail now, not at the allocation.
			if cols := max(maxIndex+1, numFeatures); !limits.matrixFits(labels.n, cols) {
				return nil, matrixTooLargeError(file, s, labels.n, cols, limits, fmt.Sprintf(
					" (reached at line %d; features are indexed from 0 and the largest index so far is %d)", lineNo, maxIndex))
			}
		}
		// Checked on every line, not only this rank's, so that every rank rejects the same file.
		if dup := duplicateIndex(lineIdx); dup >= 0 {
			return nil, &DataError{File: file, Line: lineNo, Msg: fmt.Sprintf("feature index %d appears twice", dup)}
		}
		row++
	}
	if row == 0 {
		return nil, &DataError{File: file, Msg: "the file has no data lines"}
	}
	if labels.n == 0 {
		return nil, emptyShardError(file, s, row)
	}
	cols := maxIndex + 1
	if numFeatures > 0 {
		cols = numFeatures
	}
	if cols == 0 {
		return nil, &DataError{File: file, Msg: "no line has any feature"}
	}
	if !limits.matrixFits(labels.n, cols) {
		// A large index on another rank's line widens this rank's rows too.
		return nil, matrixTooLargeError(file, s, labels.n, cols, limits, fmt.Sprintf(
			" (features are indexed from 0 and the largest index is %d)", maxIndex))
	}
	m := &Matrix{Rows: labels.n, Cols: cols, Labels: labels.flatten(), LabelName: "label", TotalRows: row,
		LabelMin: float32(labelMin), LabelMax: float32(labelMax)}
	m.Data = make([]float32, m.Rows*m.Cols)
	nan := float32(math.NaN())
	for i := range m.Data {
		m.Data[i] = nan
	}
	idx, vals, ends := indices.flatten(), values.flatten(), rowEnds.flatten()
	start := 0
	for i, end := range ends {
		dst := m.Row(i)
		for k := start; k < end; k++ {
			dst[idx[k]] = vals[k]
		}
		start = end
	}
	// XGBoost's own names for unnamed features, so metadata and the served model agree.
	m.FeatureNames = make([]string, cols)
	for j := range m.FeatureNames {
		m.FeatureNames[j] = "f" + strconv.Itoa(j)
	}
	return m, nil
}

func nextToken(b []byte) (tok, rest []byte) {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t') {
		i++
	}
	j := i
	for j < len(b) && b[j] != ' ' && b[j] != '\t' {
		j++
	}
	return b[i:j], b[j:]
}

func parseIndex(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 8 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n <= maxLibSVMIndex
}

// duplicateIndex returns an index that occurs twice in idx, or -1. Files are almost always sorted
// by index, which makes the common case one pass.
func duplicateIndex(idx []int32) int {
	sorted := true
	for k := 1; k < len(idx); k++ {
		if idx[k] <= idx[k-1] {
			sorted = false
			break
		}
	}
	if sorted {
		return -1
	}
	seen := make(map[int32]bool, len(idx))
	for _, i := range idx {
		if seen[i] {
			return int(i)
		}
		seen[i] = true
	}
	return -1
}

// bytesString views b as a string without copying, for parsers that do not keep their input.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}
