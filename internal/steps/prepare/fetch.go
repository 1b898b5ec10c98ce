package prepare

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"
)

// Fetcher opens an http(s) URL for reading.
type Fetcher interface {
	Fetch(ctx context.Context, url string) (io.ReadCloser, error)
}

// HTTPFetcher fetches with Client (nil: http.DefaultClient).
type HTTPFetcher struct{ Client *http.Client }

// Fetch GETs url; any status but 200 is an error naming the URL, the status and the start of
// the body (where servers say why).
func (h HTTPFetcher) Fetch(ctx context.Context, u string) (io.ReadCloser, error) {
	c := h.Client
	if c == nil {
		c = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", u, err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("dataset %s: GET answered %s: %s", u, resp.Status, strings.TrimSpace(string(body)))
	}
	return resp.Body, nil
}

// download copies url into a temporary file whose name keeps the URL's extension (.csv.gz is
// read through gzip), and returns it with a function that removes it.
func download(ctx context.Context, f Fetcher, rawURL string) (string, func(), error) {
	body, err := f.Fetch(ctx, rawURL)
	if err != nil {
		return "", nil, err
	}
	defer body.Close()
	suffix := ".csv"
	if u, err := url.Parse(rawURL); err == nil && strings.HasSuffix(strings.ToLower(path.Base(u.Path)), ".gz") {
		suffix = ".csv.gz"
	}
	tmp, err := os.CreateTemp("", "prepare-data-*"+suffix)
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.Remove(tmp.Name()) }
	if _, err := io.Copy(tmp, body); err != nil {
		tmp.Close()
		cleanup()
		return "", nil, fmt.Errorf("dataset %s: download: %w", rawURL, err)
	}
	if err := tmp.Close(); err != nil {
		cleanup()
		return "", nil, err
	}
	return tmp.Name(), cleanup, nil
}
