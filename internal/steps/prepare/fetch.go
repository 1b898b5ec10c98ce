package prepare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gangboost/gangboost/internal/plumbing/sysmem"
)

// Fetcher opens an http(s) URL for reading.
type Fetcher interface {
	// Fetch returns the body as the server sends it (a Content-Encoding left in place) and its
	// length, -1 when the server does not say.
	Fetch(ctx context.Context, url string) (body io.ReadCloser, size int64, err error)
}

// HTTPFetcher fetches with Client (nil: http.DefaultClient).
type HTTPFetcher struct{ Client *http.Client }

// Fetch GETs url; any status but 200 is an error naming the URL, the status and the start of
// the body (where servers say why).
func (h HTTPFetcher) Fetch(ctx context.Context, u string) (io.ReadCloser, int64, error) {
	c := h.Client
	if c == nil {
		c = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, err
	}
	// Asked for explicitly, gzip is left to the caller: Go's transport would otherwise decode it
	// out of sight of the decompression bound (a 2 MB body can expand to gigabytes).
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := c.Do(req)
	if err != nil {
		return nil, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, 0, fmt.Errorf("GET answered %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	switch enc := strings.ToLower(resp.Header.Get("Content-Encoding")); enc {
	case "", "identity", "gzip", "x-gzip":
	default:
		resp.Body.Close()
		return nil, 0, fmt.Errorf("the server sent Content-Encoding %q, asked for gzip or none", enc)
	}
	size := resp.ContentLength
	if resp.Uncompressed {
		size = -1
	}
	return resp.Body, size, nil
}

// Defaults of Limits.
const (
	DefaultMaxDownloadBytes = 1 << 30
	DefaultMaxGzipRatio     = 100
	DefaultDownloadTimeout  = time.Hour
	DefaultStallTimeout     = time.Minute
)

// Limits bound what reading a data set may take. Zero fields take the defaults above.
type Limits struct {
	// MaxDownloadBytes bounds the bytes a URL sends, as sent (before gzip is decoded).
	MaxDownloadBytes int64
	// MaxGzipRatio bounds how many times larger than its compressed bytes gzip data may get: real
	// CSV compresses 3 to 30 times, a decompression bomb a thousand.
	MaxGzipRatio int64
	// DownloadTimeout bounds the whole download of a URL (the data are parsed as they arrive, so
	// this includes the parse).
	DownloadTimeout time.Duration
	// StallTimeout bounds the time spent waiting for the server's answer, and then for each
	// stallBytes of its body: a server that never answers, or trickles a byte a second, stalls.
	StallTimeout time.Duration
	// MaxMatrixBytes bounds the parsed data set's dense matrix, rows x features x 4 bytes,
	// checked as each row is parsed (the rows are held in memory for the split), so that a data
	// set larger than the step's memory fails with a message instead of the OOM killer. 0 means
	// an eighth of the memory this process may still take (see defaultMaxMatrix).
	MaxMatrixBytes int64
}

func (l Limits) withDefaults() Limits {
	if l.MaxDownloadBytes <= 0 {
		l.MaxDownloadBytes = DefaultMaxDownloadBytes
	}
	if l.MaxGzipRatio <= 0 {
		l.MaxGzipRatio = DefaultMaxGzipRatio
	}
	if l.DownloadTimeout <= 0 {
		l.DownloadTimeout = DefaultDownloadTimeout
	}
	if l.StallTimeout <= 0 {
		l.StallTimeout = DefaultStallTimeout
	}
	return l
}

// stallBytes is the progress that restarts the stall timeout: fewer bytes than this in
// StallTimeout of waiting (16 KiB a minute by default, 270 B/s) is a stalled server, not a slow
// network.
const stallBytes = 16 << 10

// Why a download stops early; context.Cause tells which one cut it short.
var (
	errStalled  = errors.New("stalled")
	errDeadline = errors.New("download deadline")
)

// download is the body of a URL, streamed to the parser through the bounds: no copy of it is
// staged on disk, so a kill leaves nothing behind, and the parse reads only what arrived.
type download struct {
	lim    Limits
	ctx    context.Context
	cancel context.CancelCauseFunc
	stop   func() bool // stops the deadline
	body   io.ReadCloser
	n      int64 // bytes received so far

	mu     sync.Mutex
	stall  *time.Timer   // runs while waiting for the server
	since  time.Time     // when the current wait started
	budget time.Duration // waiting left before the server has stalled
	mark   int64         // n when the budget was last refilled
}

// openURL starts the download of rawURL within lim (already defaulted).
func openURL(ctx context.Context, f Fetcher, rawURL string, lim Limits) (*download, error) {
	d := &download{lim: lim}
	d.ctx, d.cancel = context.WithCancelCause(ctx)
	d.stop = time.AfterFunc(lim.DownloadTimeout, func() { d.cancel(errDeadline) }).Stop
	d.waiting(true)
	body, size, err := f.Fetch(d.ctx, rawURL)
	d.waiting(false)
	if err != nil {
		err = fmt.Errorf("dataset %s: %w", rawURL, d.explain(err))
		d.close()
		return nil, err
	}
	d.body = body
	if size > lim.MaxDownloadBytes {
		d.close()
		return nil, fmt.Errorf("dataset %s: the server announces %s, more than max_download_bytes (%s): raise max_download_bytes if the data set is really this large",
			rawURL, sysmem.FormatBytes(uint64(size)), sysmem.FormatBytes(uint64(lim.MaxDownloadBytes)))
	}
	return d, nil
}

// waiting starts (true) or stops the stall timer around a wait for the server. Only time spent
// waiting counts, not time the parser spends on bytes already here; the budget is refilled each
// time stallBytes more have come.
func (d *download) waiting(on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !on {
		if d.stall != nil && d.stall.Stop() {
			d.budget -= time.Since(d.since)
		}
		return
	}
	if d.stall == nil || d.n-d.mark >= stallBytes {
		d.budget, d.mark = d.lim.StallTimeout, d.n
	}
	d.since = time.Now()
	if d.stall == nil {
		d.stall = time.AfterFunc(d.budget, func() { d.cancel(errStalled) })
	} else {
		d.stall.Reset(max(d.budget, 0))
	}
}

func (d *download) Read(p []byte) (int, error) {
	if err := d.ctx.Err(); err != nil {
		return 0, d.explain(err)
	}
	// One byte past the bound tells a body of exactly MaxDownloadBytes from a longer one.
	if left := d.lim.MaxDownloadBytes + 1 - d.n; int64(len(p)) > left {
		p = p[:left]
	}
	var n int
	var err error
	if len(p) > 0 {
		d.waiting(true)
		n, err = d.body.Read(p)
		d.waiting(false)
		d.n += int64(n)
	}
	if d.n > d.lim.MaxDownloadBytes {
		return n, fmt.Errorf("the download passed max_download_bytes (%s): raise max_download_bytes if the data set is really this large",
			sysmem.FormatBytes(uint64(d.lim.MaxDownloadBytes)))
	}
	if err != nil && !errors.Is(err, io.EOF) {
		err = d.explain(err)
	}
	return n, err
}

// explain turns a failed fetch or read into what happened: a bound reached, the run stopped, or
// the network's own error.
func (d *download) explain(err error) error {
	got := ""
	if d.n > 0 {
		got = fmt.Sprintf(" after %s", sysmem.FormatBytes(uint64(d.n)))
	}
	switch cause := context.Cause(d.ctx); {
	case errors.Is(cause, errStalled):
		return fmt.Errorf("the server sent less than %s in %v of waiting%s (stall_timeout_seconds): it does not answer or sends too slowly; retry, or raise stall_timeout_seconds",
			sysmem.FormatBytes(stallBytes), d.lim.StallTimeout, got)
	case errors.Is(cause, errDeadline):
		return fmt.Errorf("not read within %v%s (download_timeout_seconds): raise download_timeout_seconds for a slow server or a large data set",
			d.lim.DownloadTimeout, got)
	case cause != nil:
		return fmt.Errorf("stopped%s: %w", got, cause)
	}
	return err
}

func (d *download) close() {
	d.waiting(false)
	d.stop()
	if d.body != nil {
		d.body.Close()
	}
	d.cancel(nil)
}

func (d *download) Close() error {
	d.close()
	return nil
}
