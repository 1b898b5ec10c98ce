package prepare

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/gangboost/gangboost/internal/training/dataset"
	"github.com/gangboost/gangboost/test/s3server"
)

type partRow struct {
	A     float64 `parquet:"a"`
	B     int32   `parquet:"b"`
	Class string  `parquet:"class"`
}

func partBytes(t *testing.T, first, n int) []byte {
	t.Helper()
	rows := make([]partRow, n)
	for i := range rows {
		g := first + i
		rows[i] = partRow{A: float64(g) / 3, B: int32(g % 5), Class: []string{"x", "y"}[g%2]}
	}
	var b bytes.Buffer
	w := parquet.NewGenericWriter[partRow](&b, parquet.MaxRowsPerRowGroup(40))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestObjectStoreParquetParts: prepare-data reads the Parquet part files under an s3:// prefix
// of a real MinIO server, splits them, and the trainer reads the split back; a wrong secret and
// a missing bucket say what to check.
func TestObjectStoreParquetParts(t *testing.T) {
	srv := s3server.Start(t)
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	srv.MakeBucket(t, "mlpipeline")
	for p := range 3 {
		srv.Put(t, "mlpipeline", fmt.Sprintf("raw/parts/part-%d.parquet", p), partBytes(t, p*100, 100))
	}
	store := dataset.ObjectStore{Endpoint: srv.Endpoint, PathStyle: true}
	claim := t.TempDir()
	res, err := Run(t.Context(), Options{Dataset: "s3://mlpipeline/raw/parts/", Name: "parts", Label: "class",
		TestFraction: 0.2, Seed: 1, Claim: claim, ObjectStore: store})
	if err != nil {
		t.Fatal(err)
	}
	if res.Schema.Rows != 300 || res.Schema.TrainRows != 240 || res.Schema.TestRows != 60 || len(res.Schema.Classes) != 2 {
		t.Fatalf("schema %+v: want 300 rows split 240/60, 2 classes", res.Schema)
	}
	m, err := dataset.Load(dataset.Spec{Path: filepath.Join(claim, res.TrainPath), Label: "class"}, dataset.Shard{})
	if err != nil || m.Rows != 240 || m.Cols != 2 {
		t.Fatalf("train.csv: %v rows %d cols %d", err, m.Rows, m.Cols)
	}

	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	_, err = Run(t.Context(), Options{Dataset: "s3://mlpipeline/raw/parts/", Name: "p2", Label: "class", TestFraction: 0.2, Claim: claim, ObjectStore: store})
	if err == nil || !strings.Contains(err.Error(), "refused the credentials") {
		t.Errorf("wrong secret: %v", err)
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3server.SecretKey)
	_, err = Run(t.Context(), Options{Dataset: "s3://nosuch/raw/", Name: "p3", Label: "class", TestFraction: 0.2, Claim: claim, ObjectStore: store})
	if err == nil || !strings.Contains(err.Error(), `bucket "nosuch" does not exist`) {
		t.Errorf("missing bucket: %v", err)
	}
	if _, err := os.Stat(filepath.Join(claim, "datasets", "p2")); err == nil {
		t.Error("a failed read left a data set folder")
	}
}
