package dataset

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/gangboost/gangboost/internal/plumbing/objectstore"
)

// ObjectStore says how to reach the S3-compatible object store that s3:// and minio:// data sets
// live in (objectstore.Config).
type ObjectStore = objectstore.Config

// KFPMinIOEndpoint is the in-cluster MinIO service of a Kubeflow Pipelines install, where a
// minio:// artifact URI points when no endpoint is given.
const KFPMinIOEndpoint = objectstore.KFPMinIOEndpoint

// DefaultMaxObjects bounds the objects of one s3:// prefix or local folder a load takes when
// Limits.MaxObjects is 0: listing stops there instead of holding an unbounded name list.
const DefaultMaxObjects = 10000

// IsObjectURI reports whether p names a data set in an object store (s3:// or minio://).
func IsObjectURI(p string) bool { return objectstore.IsURI(p) }

// part is one file of a data set: a local file or an object.
type part struct {
	Name string // as shown in messages: a path, or s3://bucket/key
	Size int64
	key  string // the object key (object stores)
}

// store lists and reads the files of a data set; every byte it returns is counted in read.
type store interface {
	// parts lists the data set's files, sorted by name: the file itself, or the files in the
	// folder or under the prefix, at most max of them.
	parts(max int) ([]part, error)
	// open reads n bytes of p from offset off; n < 0 reads to its end.
	open(p part, off, n int64) (io.ReadCloser, error)
	// readAt reads len(b) bytes of p at off.
	readAt(p part, b []byte, off int64) error
}

// byteCounter counts the bytes a load read from its store, for the progress lines.
type byteCounter struct{ n atomic.Int64 }

type countingReader struct {
	r io.ReadCloser
	c *byteCounter
}

func (r countingReader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	r.c.n.Add(int64(n))
	return n, err
}
func (r countingReader) Close() error { return r.r.Close() }

// newStore returns the store of spec.Path.
func newStore(spec Spec, s Shard, c *byteCounter) (store, error) {
	if IsObjectURI(spec.Path) {
		return newS3Store(spec.Path, spec.ObjectStore, s, c)
	}
	return &localStore{path: spec.Path, c: c}, nil
}

// skipPart reports whether a file of a folder or prefix is no data: Spark and Hadoop write
// _SUCCESS, _metadata and .crc files next to the part files.
func skipPart(name string) bool {
	base := path.Base(name)
	return strings.HasSuffix(name, "/") || strings.HasPrefix(base, "_") || strings.HasPrefix(base, ".")
}

func tooManyObjectsError(where string, max int) error {
	return fmt.Errorf("%s holds more than %d files: a data set of this many parts is not read (the listing stops here to bound memory); "+
		"merge the parts into fewer, larger files (a few hundred MB each), or point at a narrower prefix", where, max)
}

type localStore struct {
	path string
	c    *byteCounter
}

func (s *localStore) parts(max int) ([]part, error) {
	st, err := os.Stat(s.path)
	if err != nil {
		return nil, fmt.Errorf("open data: %w", err)
	}
	if !st.IsDir() {
		return []part{{Name: s.path, Size: st.Size()}}, nil
	}
	d, err := os.Open(s.path)
	if err != nil {
		return nil, fmt.Errorf("open data: %w", err)
	}
	defer d.Close()
	var ps []part
	for {
		// Read in batches so that a folder of a million files fails at max, not after listing all.
		ents, err := d.ReadDir(1024)
		for _, e := range ents {
			if skipPart(e.Name()) {
				continue
			}
			// Only regular files (after symlinks) are data: opening a named pipe would block.
			info, err := os.Stat(filepath.Join(s.path, e.Name()))
			if err != nil {
				return nil, fmt.Errorf("open data: %w", err)
			}
			if !info.Mode().IsRegular() {
				continue
			}
			if len(ps) == max {
				return nil, tooManyObjectsError("folder "+s.path, max)
			}
			ps = append(ps, part{Name: filepath.Join(s.path, e.Name()), Size: info.Size()})
		}
		if errors.Is(err, io.EOF) || len(ents) == 0 {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("open data: %w", err)
		}
	}
	if len(ps) == 0 {
		return nil, &DataError{File: s.path, Msg: "the folder holds no data files (only regular files are data; names starting with _ or . are skipped)"}
	}
	slices.SortFunc(ps, func(a, b part) int { return strings.Compare(a.Name, b.Name) })
	return ps, nil
}

func (s *localStore) open(p part, off, n int64) (io.ReadCloser, error) {
	f, err := os.Open(p.Name)
	if err != nil {
		return nil, fmt.Errorf("open data: %w", err)
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	if n < 0 {
		return countingReader{f, s.c}, nil
	}
	return countingReader{limitedFile{io.LimitReader(f, n), f}, s.c}, nil
}

// limitedFile is a byte range of an open file.
type limitedFile struct {
	io.Reader
	io.Closer
}

func (s *localStore) readAt(p part, b []byte, off int64) error {
	f, err := os.Open(p.Name)
	if err != nil {
		return fmt.Errorf("open data: %w", err)
	}
	defer f.Close()
	n, err := f.ReadAt(b, off)
	s.c.n.Add(int64(n))
	return err
}

// s3Store reads objects through minio-go, the MinIO project's S3 client (AWS Signature V4).
type s3Store struct {
	uri            string // as given, for messages
	bucket, prefix string
	client         *objectstore.Client
	core           minio.Core
	c              *byteCounter
}

// requestTimeout bounds one listing or metadata request; object bodies stream without a bound.
const requestTimeout = 2 * time.Minute

func newS3Store(uri string, o ObjectStore, s Shard, c *byteCounter) (*s3Store, error) {
	loc, err := objectstore.ParseURI(uri)
	if err != nil {
		return nil, err
	}
	// The rank goes into the User-Agent, so that the store's access log tells who read what.
	cl, err := objectstore.New(o, loc.Scheme, fmt.Sprintf("rank-%d-of-%d", s.Rank, s.World))
	if err != nil {
		return nil, err
	}
	return &s3Store{uri: uri, bucket: loc.Bucket, prefix: loc.Key, client: cl, core: minio.Core{Client: cl.Client}, c: c}, nil
}

// s3Error says what a failed request means and what to do.
func (s *s3Store) s3Error(what string, err error) error { return s.client.Explain(s.uri, what, err) }

func (s *s3Store) name(key string) string {
	scheme, _, _ := strings.Cut(s.uri, "://")
	return scheme + "://" + s.bucket + "/" + key
}

func (s *s3Store) parts(max int) ([]part, error) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	if s.prefix != "" && !strings.HasSuffix(s.prefix, "/") {
		// One object, when the key names one; else a prefix of several.
		info, err := s.core.Client.StatObject(ctx, s.bucket, s.prefix, minio.StatObjectOptions{})
		if err == nil {
			return []part{{Name: s.uri, Size: info.Size, key: s.prefix}}, nil
		}
		if code := minio.ToErrorResponse(err).Code; code != "NoSuchKey" && code != "NotFound" && minio.ToErrorResponse(err).StatusCode != http.StatusNotFound {
			return nil, s.s3Error("stat", err)
		}
	}
	var ps []part
	lctx, lcancel := context.WithCancel(ctx)
	defer lcancel() // stops the listing goroutine when we stop early
	for obj := range s.core.Client.ListObjects(lctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix, Recursive: true}) {
		if obj.Err != nil {
			return nil, s.s3Error("list", obj.Err)
		}
		if skipPart(obj.Key) {
			continue
		}
		if len(ps) == max {
			return nil, tooManyObjectsError("prefix "+s.uri, max)
		}
		ps = append(ps, part{Name: s.name(obj.Key), Size: obj.Size, key: obj.Key})
	}
	if len(ps) == 0 {
		// Tell a missing bucket from an empty prefix: listing a missing bucket can succeed empty
		// on some servers.
		if ok, err := s.core.Client.BucketExists(ctx, s.bucket); err != nil {
			return nil, s.s3Error("list", err)
		} else if !ok {
			return nil, s.s3Error("list", minio.ErrorResponse{Code: "NoSuchBucket"})
		}
		return nil, fmt.Errorf("%s (endpoint %s): no object with this key or under this prefix: check the path", s.uri, s.client.Endpoint)
	}
	slices.SortFunc(ps, func(a, b part) int { return strings.Compare(a.key, b.key) })
	return ps, nil
}

func (s *s3Store) open(p part, off, n int64) (io.ReadCloser, error) {
	opts := minio.GetObjectOptions{}
	switch {
	case n == 0:
		return io.NopCloser(strings.NewReader("")), nil
	case n > 0:
		if err := opts.SetRange(off, off+n-1); err != nil {
			return nil, err
		}
	case off > 0:
		if err := opts.SetRange(off, 0); err != nil {
			return nil, err
		}
	}
	body, _, _, err := s.core.GetObject(context.Background(), s.bucket, p.key, opts)
	if err != nil {
		return nil, s.s3Error("read "+p.key, err)
	}
	return countingReader{body, s.c}, nil
}

func (s *s3Store) readAt(p part, b []byte, off int64) error {
	if len(b) == 0 {
		return nil
	}
	opts := minio.GetObjectOptions{}
	if err := opts.SetRange(off, off+int64(len(b))-1); err != nil {
		return err
	}
	body, _, _, err := s.core.GetObject(context.Background(), s.bucket, p.key, opts)
	if err != nil {
		return s.s3Error(fmt.Sprintf("read %s bytes %d-%d", p.key, off, off+int64(len(b))-1), err)
	}
	defer body.Close()
	n, err := io.ReadFull(body, b)
	s.c.n.Add(int64(n))
	if err != nil {
		return fmt.Errorf("%s: read bytes %d-%d: %w", p.Name, off, off+int64(len(b))-1, err)
	}
	return nil
}

// partReaderAt is one part as an io.ReaderAt (what the Parquet reader takes). A Parquet row
// group is read as one ranged request, not one per page; the request's body is read forward as
// the pages are decoded (the reader asks for a column chunk's pages in order, and readRowGroup
// takes the column chunks in file order), so a rank holds a page at a time rather than a whole
// row group's compressed columns next to its matrix. Reads inside the window (the footer) come
// from memory; any other read is a request of its own.
type partReaderAt struct {
	s      store
	p      part
	winOff int64
	win    []byte
	// The streamed span: body holds the part's bytes [pos, end).
	body     io.ReadCloser
	br       *bufio.Reader
	pos, end int64
}

// streamBufferBytes buffers a streamed span: page headers are read a few bytes at a time.
const streamBufferBytes = 64 << 10

func (r *partReaderAt) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 || off >= r.p.Size {
		return 0, io.EOF
	}
	n := len(b)
	if off+int64(n) > r.p.Size {
		n = int(r.p.Size - off)
	}
	switch {
	case off >= r.winOff && off+int64(n) <= r.winOff+int64(len(r.win)):
		copy(b, r.win[off-r.winOff:])
	case r.body != nil && off >= r.pos && off+int64(n) <= r.end:
		if err := r.readForward(b[:n], off); err != nil {
			return 0, err
		}
	default:
		if err := r.s.readAt(r.p, b[:n], off); err != nil {
			return 0, err
		}
	}
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

// readForward reads b at off from the streamed span, skipping the bytes before off (the
// columns of the row group that are not read).
func (r *partReaderAt) readForward(b []byte, off int64) error {
	if _, err := r.br.Discard(int(off - r.pos)); err != nil {
		r.closeStream()
		return fmt.Errorf("%s: read bytes %d-%d: %w", r.p.Name, r.pos, off-1, err)
	}
	r.pos = off
	k, err := io.ReadFull(r.br, b)
	r.pos += int64(k)
	if err != nil {
		r.closeStream()
		return fmt.Errorf("%s: read bytes %d-%d: %w", r.p.Name, off, off+int64(len(b))-1, err)
	}
	return nil
}

// prefetch reads [off, off+n) into the window, reusing its memory.
func (r *partReaderAt) prefetch(off, n int64) error {
	if cap(r.win) < int(n) {
		r.win = make([]byte, n)
	}
	r.win, r.winOff = r.win[:n], off
	if err := r.s.readAt(r.p, r.win, off); err != nil {
		r.win = r.win[:0]
		return err
	}
	return nil
}

// stream opens [off, off+n) as one request, read forward by ReadAt.
func (r *partReaderAt) stream(off, n int64) error {
	r.closeStream()
	body, err := r.s.open(r.p, off, n)
	if err != nil {
		return err
	}
	if r.br == nil {
		r.br = bufio.NewReaderSize(body, streamBufferBytes)
	} else {
		r.br.Reset(body)
	}
	r.body, r.pos, r.end = body, off, off+n
	return nil
}

func (r *partReaderAt) closeStream() {
	if r.body != nil {
		r.body.Close()
		r.body = nil
		r.br.Reset(nil)
	}
}

// release lets go of the part's request and buffers once its last row group is read.
func (r *partReaderAt) release() {
	r.closeStream()
	r.win, r.br = nil, nil
}
