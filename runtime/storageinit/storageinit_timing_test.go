package storageinit

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/internal/contract/modelobjects"
	"github.com/gangboost/gangboost/internal/plumbing/objectstore"
	"github.com/gangboost/gangboost/test/s3server"
)

// BenchmarkDownload: what the storage initializer adds to a predictor's start, from a local MinIO
// (download, then the sha256 check), for a model file of each size: 2.5 MB is about what 100
// rounds of depth-6 trees on 1M x 28 rows (HIGGS-like) save as JSON; 100 MB a large forest.
// MB/s is the figure to compare.
func BenchmarkDownload(b *testing.B) {
	srv := s3server.Start(b)
	srv.MakeBucket(b, "models")
	for _, size := range []int{5 << 19, 100 << 20} {
		uri := fmt.Sprintf("s3://models/bench/%d/", size)
		model := make([]byte, size)
		if _, err := rand.Read(model); err != nil {
			b.Fatal(err)
		}
		f, err := modelobjects.Open(uri, objectstore.Config{Endpoint: srv.Endpoint, PathStyle: true}, "bench")
		if err != nil {
			b.Fatal(err)
		}
		for _, kv := range [][2]string{{"AWS_ACCESS_KEY_ID", s3server.AccessKey}, {"AWS_SECRET_ACCESS_KEY", s3server.SecretKey}} {
			b.Setenv(kv[0], kv[1])
		}
		if err := f.Publish(context.Background(), "model.json", model, &modeldir.Metadata{}, false); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%.1fMB", float64(size)/(1<<20)), func(b *testing.B) {
			kserveEnv(b, srv, s3server.SecretKey)
			b.SetBytes(int64(size))
			for b.Loop() {
				dest := filepath.Join(b.TempDir(), "models")
				if _, err := Download(context.Background(), uri, dest, DefaultLimits, quiet); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				os.RemoveAll(dest)
				b.StartTimer()
			}
		})
	}
}
