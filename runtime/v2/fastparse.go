package v2

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// ParseInferRequest decodes the JSON part of a V2 infer request. Requests as clients send them
// (lower-case keys, plain strings, numeric shapes) take a hand-written path that reads the body
// once without reflection; anything else (escaped strings, unknown or repeated keys, any syntax
// error) goes through encoding/json, which also words the error. Both paths give the same
// result for every body the fast one accepts (FuzzParseInferRequest checks this).
func ParseInferRequest(body []byte) (*InferRequest, error) {
	req := new(InferRequest)
	if err := ParseInferRequestInto(req, body); err != nil {
		return nil, err
	}
	return req, nil
}

// ParseInferRequestInto is ParseInferRequest into req, whose earlier contents it replaces but
// whose memory it reuses: input and output slices, shapes, parameter maps, and strings equal to
// the ones it held. A handler that keeps one InferRequest per request slot parses a stream of
// same-shaped requests without allocating. The result is the one ParseInferRequest gives
// (FuzzParseInferRequestInto checks this); its raw values point into body.
func ParseInferRequestInto(req *InferRequest, body []byte) error {
	body = SanitizeNonFinite(body)
	if parseFast(req, body) {
		return nil
	}
	std, err := parseStd(body)
	if err != nil {
		return err
	}
	*req = *std
	return nil
}

// parseStd is the encoding/json path.
func parseStd(body []byte) (*InferRequest, error) {
	var req InferRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		return nil, Errorf(KindInvalidInput, "malformed request body: %s", DescribeJSONError(err))
	}
	if dec.More() {
		return nil, Errorf(KindInvalidInput, "malformed request body: trailing data after the JSON object")
	}
	return &req, nil
}

// DescribeJSONError words an encoding/json error for a client: where the syntax broke, or which
// field had the wrong type.
func DescribeJSONError(err error) string {
	if se, ok := err.(*json.SyntaxError); ok {
		return se.Error() + " at byte " + strconv.FormatInt(se.Offset, 10)
	}
	if te, ok := err.(*json.UnmarshalTypeError); ok {
		return "field " + te.Field + ": want " + te.Type.String() + ", got JSON " + te.Value
	}
	return err.Error()
}

// scanner reads one JSON document; every method returns false on anything the fast path does
// not handle, and the caller falls back to encoding/json.
type scanner struct {
	b []byte
	i int
}

// parseFast parses b into req, reusing what req held (see ParseInferRequestInto): a key that
// is present takes over the earlier value's memory, one that is absent leaves the field as a
// fresh parse does (nil), so the result never depends on what req held before.
func parseFast(req *InferRequest, b []byte) bool {
	s := scanner{b: b}
	prev := *req
	*req = InferRequest{}
	var seen [4]bool
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "id":
			return once(&seen[0]) && s.str(&req.ID, prev.ID)
		case "parameters":
			return once(&seen[1]) && s.params(&req.Parameters, prev.Parameters)
		case "inputs":
			req.Inputs = reuse(prev.Inputs)
			return once(&seen[2]) && s.array(func() bool {
				in, before := grow(&req.Inputs)
				return s.input(in, before)
			})
		case "outputs":
			req.Outputs = reuse(prev.Outputs)
			return once(&seen[3]) && s.array(func() bool {
				o, before := grow(&req.Outputs)
				return s.output(o, before)
			})
		}
		return s.ignore(key, "id", "parameters", "inputs", "outputs")
	})
	s.space()
	return ok && s.i == len(s.b)
}

// reuse is prev emptied, keeping its array; a present but empty JSON array is an empty, not a
// nil, slice, as encoding/json gives it.
func reuse[T any](prev []T) []T {
	if prev == nil {
		return []T{}
	}
	return prev[:0]
}

// grow extends *list by one zero element and returns it with what that slot held before (the
// memory the new element may take over).
func grow[T any](list *[]T) (elem *T, before T) {
	n := len(*list)
	if n < cap(*list) {
		*list = (*list)[:n+1]
		before = (*list)[n]
		var zero T
		(*list)[n] = zero
	} else {
		var zero T
		*list = append(*list, zero)
	}
	return &(*list)[n], before
}

// ignore skips the value of a key the type does not have, as encoding/json does (KServe's
// client adds "model_name", for one). encoding/json matches keys case-insensitively, so a key
// that differs from a field only in case leaves the fast path.
func (s *scanner) ignore(key []byte, fields ...string) bool {
	for _, f := range fields {
		if strings.EqualFold(string(key), f) {
			return false
		}
	}
	_, ok := s.value()
	return ok
}

// once marks a key as seen; a repeated key leaves the fast path (encoding/json merges them).
func once(seen *bool) bool {
	if *seen {
		return false
	}
	*seen = true
	return true
}

// input parses one input into in, taking over prev's memory.
func (s *scanner) input(in *RequestInput, prev RequestInput) bool {
	var seen [5]bool
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "name":
			return once(&seen[0]) && s.str(&in.Name, prev.Name)
		case "shape":
			in.Shape = reuse(prev.Shape)
			return once(&seen[1]) && s.array(func() bool {
				n, ok := s.int64()
				in.Shape = append(in.Shape, n)
				return ok
			})
		case "datatype":
			return once(&seen[2]) && s.str(&in.Datatype, prev.Datatype)
		case "parameters":
			return once(&seen[3]) && s.params(&in.Parameters, prev.Parameters)
		case "data":
			raw, ok := s.value()
			in.Data = raw
			return once(&seen[4]) && ok && string(raw) != "null"
		}
		return s.ignore(key, "name", "shape", "datatype", "parameters", "data")
	})
}

// output parses one requested output into o, taking over prev's memory.
func (s *scanner) output(o *RequestOutput, prev RequestOutput) bool {
	var seen [2]bool
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "name":
			return once(&seen[0]) && s.str(&o.Name, prev.Name)
		case "parameters":
			return once(&seen[1]) && s.params(&o.Parameters, prev.Parameters)
		}
		return s.ignore(key, "name", "parameters")
	})
}

// params parses a parameters object into *p, reusing prev's map (emptied).
func (s *scanner) params(p *Parameters, prev Parameters) bool {
	if prev == nil {
		prev = Parameters{}
	}
	clear(prev)
	*p = prev
	return s.object(func(key []byte) bool {
		if _, dup := (*p)[string(key)]; dup {
			return false
		}
		raw, ok := s.value()
		(*p)[paramName(key)] = raw
		return ok
	})
}

// paramName is key as a string, without a copy for the parameters this server reads.
func paramName(key []byte) string {
	switch string(key) {
	case ParamBinaryDataSize:
		return ParamBinaryDataSize
	case ParamBinaryData:
		return ParamBinaryData
	case ParamBinaryDataOutput:
		return ParamBinaryDataOutput
	case ParamContentType:
		return ParamContentType
	}
	return string(key)
}

// space skips white space. Compact JSON, what clients send, has none: one comparison says so,
// since every white space byte is below '!' (a quarter of the parse's time went to the
// loop's switch when space was that loop alone).
func (s *scanner) space() {
	if s.i < len(s.b) && s.b[s.i] > ' ' {
		return
	}
	s.spaces()
}

func (s *scanner) spaces() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next skips white space and consumes c.
func (s *scanner) next(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// object reads {"key": value, ...}, calling member with each key and the scanner at its value.
func (s *scanner) object(member func(key []byte) bool) bool {
	if !s.next('{') {
		return false
	}
	if s.next('}') {
		return true
	}
	for {
		s.space()
		key, ok := s.rawStr()
		if !ok || !s.next(':') || !member(key) {
			return false
		}
		if s.next(',') {
			continue
		}
		return s.next('}')
	}
}

// array reads [elem, ...], calling elem with the scanner at each element.
func (s *scanner) array(elem func() bool) bool {
	if !s.next('[') {
		return false
	}
	if s.next(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if s.next(',') {
			continue
		}
		return s.next(']')
	}
}

// rawStr reads a string without escapes and of printable ASCII only (so its bytes are its
// value), returning its content.
func (s *scanner) rawStr() ([]byte, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		c := s.b[j]
		switch {
		case c == '"':
			s.i = j + 1
			return s.b[start:j], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
	}
	return nil, false
}

// str reads a string into *dst; equal to prev, it is prev, so a repeated name costs no copy.
func (s *scanner) str(dst *string, prev string) bool {
	s.space()
	b, ok := s.rawStr()
	if string(b) == prev {
		*dst = prev
	} else {
		*dst = string(b)
	}
	return ok
}

// int64 reads an integer as encoding/json reads one into an int64: -?digits, no fraction or
// exponent, no leading zeros, in range.
func (s *scanner) int64() (int64, bool) {
	s.space()
	start := s.i
	if !s.number() {
		return 0, false
	}
	digits := s.b[start:s.i]
	neg := digits[0] == '-'
	if neg {
		digits = digits[1:]
	}
	if len(digits) > 18 { // 18 digits never overflow; more may
		n, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
		return n, err == nil
	}
	var n int64
	for _, c := range digits {
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// number reads a JSON number (RFC 8259 grammar) and reports whether it had neither fraction
// nor exponent.
func (s *scanner) number() bool {
	b, i := s.b, s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	integer := true
	if i < len(b) && b[i] == '.' {
		integer = false
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		integer = false
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	s.i = i
	return integer
}

// value reads any JSON value and returns its bytes (a json.RawMessage as encoding/json gives
// it). Strings with escapes or non-ASCII bytes leave the fast path.
func (s *scanner) value() ([]byte, bool) {
	s.space()
	start := s.i
	if !s.skip(0) {
		return nil, false
	}
	return s.b[start:s.i:s.i], true
}

// numbers reads a flat array of numbers, a request's usual "data", without a call per
// element; for any other array it leaves the scanner where it was and returns false.
func (s *scanner) numbers() bool {
	start := s.i
	s.i++ // '['
	s.space()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		return true
	}
	for {
		s.space()
		at := s.i
		if at >= len(s.b) || (s.b[at] != '-' && (s.b[at] < '0' || s.b[at] > '9')) {
			break
		}
		if s.number(); s.i == at {
			break
		}
		s.space()
		if s.i < len(s.b) && s.b[s.i] == ',' {
			s.i++
			continue
		}
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return true
		}
		break
	}
	s.i = start
	return false
}

// maxDepth bounds nesting on the fast path; deeper bodies go to encoding/json.
const maxDepth = 64

func (s *scanner) skip(depth int) bool {
	if depth > maxDepth {
		return false
	}
	s.space()
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return s.object(func([]byte) bool { return s.skip(depth + 1) })
	case c == '[':
		return s.numbers() || s.array(func() bool { return s.skip(depth + 1) })
	case c == '"':
		_, ok := s.rawStr()
		return ok
	case c == '-' || (c >= '0' && c <= '9'):
		start := s.i
		s.number()
		return s.i > start
	default:
		for _, lit := range [...]string{"true", "false", "null"} {
			if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
				s.i += len(lit)
				return true
			}
		}
		return false
	}
}
