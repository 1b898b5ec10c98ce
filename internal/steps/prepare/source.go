package prepare

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/gangboost/gangboost/internal/plumbing/sysmem"
)

// openFile opens a data set on disk. Only a regular file (after symlinks) is data: opening a
// named pipe blocks until a writer appears, for ever and deaf to SIGTERM, and a device or a
// directory holds no CSV. The file is opened with O_NONBLOCK, so that a pipe swapped in after
// the Stat does not block the open either, and checked again on the open descriptor.
// name is the path as the user gave it, for messages.
func openFile(path, name string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", name, err)
	}
	if err := checkRegular(name, fi); err != nil {
		return nil, err
	}
	// O_NONBLOCK changes nothing for a regular file's reads on Linux.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", name, err)
	}
	if fi, err = f.Stat(); err == nil {
		err = checkRegular(name, fi)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func checkRegular(name string, fi fs.FileInfo) error {
	m := fi.Mode()
	if m.IsRegular() {
		return nil
	}
	what := "not a regular file"
	switch {
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	}
	return fmt.Errorf("dataset %s: is %s, not a regular file: give a CSV file (a symlink is followed to its target)", name, what)
}

// ratioFloor is the compressed size below which the gzip ratio is judged as if this many bytes
// had come in: the decoder reads ahead, and a small file may compress far better than a large one.
const ratioFloor = 1 << 20

// counter counts the bytes read from the source as stored or sent (before decompression).
type counter struct {
	r io.Reader
	n int64
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// gunzipped decodes gzip and stops once the output passes maxRatio times the compressed bytes
// read, before a decompression bomb fills memory.
type gunzipped struct {
	z        *gzip.Reader
	in       *counter
	out      int64
	maxRatio int64
}

func (g *gunzipped) Read(p []byte) (int, error) {
	n, err := g.z.Read(p)
	g.out += int64(n)
	if in := max(g.in.n, ratioFloor); g.out > g.maxRatio*in {
		return n, fmt.Errorf("gzip data expand to more than %d times their size (%s from %s read; max_gzip_ratio): a decompression bomb, not a data set; raise max_gzip_ratio if the data really compress this well",
			g.maxRatio, sysmem.FormatBytes(uint64(g.out)), sysmem.FormatBytes(uint64(g.in.n)))
	}
	return n, err
}

// decode reads r's gzip layers (a .gz file, also sent with Content-Encoding gzip, has two),
// known by gzip's magic bytes, within the ratio bound.
func decode(r io.Reader, maxRatio int64) (io.Reader, error) {
	in := &counter{r: r}
	br := bufio.NewReader(in)
	for range 2 {
		magic, err := br.Peek(2)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if len(magic) < 2 || magic[0] != 0x1f || magic[1] != 0x8b {
			break
		}
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("not a gzip stream: %w", err)
		}
		br = bufio.NewReader(&gunzipped{z: z, in: in, maxRatio: maxRatio})
	}
	return br, nil
}

// stoppable ends a read once ctx is done, between the parser's reads, so that a cancelled step
// (SIGTERM) stops parsing bytes that are already here, such as a gzip body's output.
type stoppable struct {
	ctx context.Context
	r   io.Reader
}

func (s stoppable) Read(p []byte) (int, error) {
	if err := s.ctx.Err(); err != nil {
		return 0, fmt.Errorf("stopped: %w", context.Cause(s.ctx))
	}
	return s.r.Read(p)
}
