package rest

import (
	"errors"
	"io"
	"net/http"
	"os"
	"slices"
	"sync/atomic"

	v2 "github.com/gangboost/gangboost/runtime/v2"
)

// bodyBudget bounds the bytes of request bodies held in memory at once, over all requests:
// --max_body_bytes bounds one body, but ten concurrent 60 MB bodies would still take the
// process to gigabytes. A request that would go over the budget is refused at once with 503
// (never queued: requests holding part of the budget while waiting for more could wait on each
// other forever).
type bodyBudget struct {
	limit int64
	used  atomic.Int64
}

// take reserves n bytes, or reports that the budget has no room.
func (b *bodyBudget) take(n int64) bool {
	if b == nil || b.limit <= 0 {
		return true
	}
	if b.used.Add(n) > b.limit {
		b.used.Add(-n)
		return false
	}
	return true
}

func (b *bodyBudget) give(n int64) {
	if b != nil && b.limit > 0 {
		b.used.Add(-n)
	}
}

func (h *handlers) busyError() error {
	return v2.Errorf(v2.KindUnavailable, "server busy: request bodies in flight would exceed %d bytes (--max_inflight_body_bytes); retry shortly", h.budget.limit)
}

// readChunk is how much of a body of unknown length is read (and reserved) at a time.
const readChunk = 256 << 10

// readBody reads at most MaxBodyBytes within the in-flight body budget, into buf's memory when
// it has room. It returns the bytes it reserved, which the caller gives back (h.budget.give)
// once the body's bytes are no longer needed; on error nothing stays reserved.
func (h *handlers) readBody(r *http.Request, buf []byte) (body []byte, reserved int64, err error) {
	limit := h.opts.MaxBodyBytes
	if limit <= 0 {
		limit = 64 << 20
	}
	if r.ContentLength > limit {
		return nil, 0, v2.Errorf(v2.KindTooLarge, "request body is %d bytes; this server accepts at most %d (--max_body_bytes)", r.ContentLength, limit)
	}
	defer func() {
		if err != nil {
			h.budget.give(reserved)
			reserved = 0
		}
	}()
	if r.ContentLength >= 0 {
		// Known length: reserve it whole before reading a byte.
		if !h.budget.take(r.ContentLength) {
			return nil, 0, h.busyError()
		}
		reserved = r.ContentLength
		body = slices.Grow(buf[:0], int(r.ContentLength))[:r.ContentLength]
		n, err := io.ReadFull(r.Body, body)
		if err != nil {
			return nil, reserved, h.bodyReadError(err, int64(n), r.ContentLength)
		}
		// A read of nothing sees the body's end (it is limited to its Content-Length) and the
		// close after it costs nothing: net/http then has no rest of the body to discard
		// before it answers, a copy through a LimitReader allocated per request otherwise.
		if _, err := r.Body.Read(nil); err == io.EOF {
			_ = r.Body.Close()
		}
		return body, reserved, nil
	}
	// Chunked: reserve as the body arrives.
	body = buf[:0]
	for {
		if int64(len(body)) > limit {
			return nil, reserved, v2.Errorf(v2.KindTooLarge, "request body exceeds %d bytes (--max_body_bytes)", limit)
		}
		if !h.budget.take(readChunk) {
			return nil, reserved, h.busyError()
		}
		reserved += readChunk
		start := len(body)
		body = slices.Grow(body, readChunk)[:start+readChunk]
		n, err := io.ReadFull(r.Body, body[start:])
		body = body[:start+n]
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			if int64(len(body)) > limit {
				return nil, reserved, v2.Errorf(v2.KindTooLarge, "request body exceeds %d bytes (--max_body_bytes)", limit)
			}
			return body, reserved, nil
		}
		if err != nil {
			return nil, reserved, h.bodyReadError(err, int64(len(body)), -1)
		}
	}
}

// bodyReadError words a failed body read: 408 when the body did not arrive within the read
// deadline, else 400. want is -1 for a chunked body.
func (h *handlers) bodyReadError(err error, got, want int64) error {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return v2.Errorf(v2.KindTimeout, "request body not received within %s (--request_timeout): got %d of %d bytes", h.opts.RequestTimeout, got, want)
	}
	return v2.Errorf(v2.KindInvalidInput, "read request body: %v (got %d of %d bytes)", err, got, want)
}
