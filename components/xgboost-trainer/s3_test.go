package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/test/s3server"
)

type flowerRow struct {
	X0      float32 `parquet:"x0"`
	X1      float64 `parquet:"x1"`
	X2      int32   `parquet:"x2"`
	Species string  `parquet:"species"`
}

// putFlowerParts uploads parts Parquet files of a three-class problem; the class "rare" is
// only in the last part, so only the rank that reads it sees it.
func putFlowerParts(t *testing.T, srv *s3server.Server, bucket, prefix string, parts, rowsPer int) (keys []string, total int) {
	t.Helper()
	r := rand.New(rand.NewSource(7))
	for p := range parts {
		rows := make([]flowerRow, rowsPer+p*17)
		for i := range rows {
			c := r.Intn(2)
			if p == parts-1 && i%3 == 0 {
				c = 2
			}
			rows[i] = flowerRow{X0: float32(c) + float32(r.NormFloat64())*0.3, X1: r.NormFloat64(), X2: int32(c * 10), Species: []string{"common", "other", "rare"}[c]}
		}
		var b bytes.Buffer
		w := parquet.NewGenericWriter[flowerRow](&b, parquet.MaxRowsPerRowGroup(100))
		if _, err := w.Write(rows); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		key := fmt.Sprintf("%spart-%05d.parquet", prefix, p)
		srv.Put(t, bucket, key, b.Bytes())
		keys, total = append(keys, key), total+len(rows)
	}
	return keys, total
}

func TestLocalGangReadsParquetPartsFromObjectStore(t *testing.T) {
	srv := s3server.Start(t)
	srv.MakeBucket(t, "mlpipeline")
	keys, total := putFlowerParts(t, srv, "mlpipeline", "flowers/", 7, 300)
	dir := filepath.Join(t.TempDir(), "models", "flowers", "v1")
	cmd := exec.Command(trainerBin, "--local", "2", "--train", "s3://mlpipeline/flowers/", "--label", "species",
		"--s3-endpoint", srv.Endpoint, "--s3-path-style", "--objective", "multi:softprob", "--num-round", "5",
		"--nthread", "1", "--model-dir", dir)
	cmd.Env = append(os.Environ(), srv.Env()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("--local 2 from s3://: %v\n%s", err, out)
	}
	md, err := modeldir.ReadMetadata(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Every rank agreed on all three classes, though only one rank read a "rare" row.
	if md.WorldSize != 3 || md.TrainRows != total || !slices.Equal(md.Classes, []string{"common", "other", "rare"}) || md.NumClass != 3 {
		t.Fatalf("metadata: world %d rows %d classes %v num_class %d; want 3 %d [common other rare] 3",
			md.WorldSize, md.TrainRows, md.Classes, md.NumClass, total)
	}
	// Each object went to exactly one rank, as the proxy in front of the server counted.
	readers := map[string][]int{}
	for _, r := range srv.Requests() {
		if r.Method != "GET" || r.Key == "" {
			continue
		}
		for rank := range 3 {
			if strings.Contains(r.UserAgent, fmt.Sprintf("gangboost/rank-%d-of-3", rank)) && !slices.Contains(readers[r.Key], rank) {
				readers[r.Key] = append(readers[r.Key], rank)
			}
		}
	}
	perRank := map[int]int{}
	for _, k := range keys {
		if len(readers[k]) != 1 {
			t.Errorf("%s was read by ranks %v, want exactly one", k, readers[k])
			continue
		}
		perRank[readers[k][0]]++
	}
	if len(perRank) != 3 {
		t.Errorf("objects per rank: %v, want every rank to read some", perRank)
	}
	// Each rank says what it read, once at the end (the parts are small: no interval passed).
	if n := strings.Count(string(out), `msg="data read"`); n != 3 {
		t.Errorf("%d \"data read\" lines, want one per rank:\n%s", n, out)
	}
}

func TestObjectStoreCredentialErrorStopsTheTrainer(t *testing.T) {
	srv := s3server.Start(t)
	srv.MakeBucket(t, "data")
	putFlowerParts(t, srv, "data", "f/", 1, 50)
	cmd := exec.Command(trainerBin, "--train", "s3://data/f/", "--label", "species", "--s3-endpoint", srv.Endpoint,
		"--s3-path-style", "--objective", "multi:softprob", "--num-round", "2")
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+s3server.AccessKey, "AWS_SECRET_ACCESS_KEY=wrong")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "refused the credentials") || !strings.Contains(string(out), "AWS_SECRET_ACCESS_KEY") {
		t.Fatalf("wrong secret: %v\n%s\nwant a failure that names the credentials", err, out)
	}
}

// A gang publishes its model to an object store prefix: the model object, then metadata.json with
// the model's sha256; the same version is refused to another job before any data is read.
func TestLocalGangPublishesTheModelToObjectStore(t *testing.T) {
	srv := s3server.Start(t)
	srv.MakeBucket(t, "models")
	const version = "s3://models/team-a/iris/run-1/"
	train := func(producer string) ([]byte, error) {
		cmd := exec.Command(trainerBin, "--local", "1", "--dataset", "iris", "--objective", "multi:softprob", "--num-round", "3",
			"--nthread", "1", "--s3-endpoint", srv.Endpoint, "--s3-path-style", "--model-dir", version, "--producer", producer)
		cmd.Env = append(os.Environ(), srv.Env()...)
		return cmd.CombinedOutput()
	}
	if out, err := train("job-1"); err != nil {
		t.Fatalf("train into %s: %v\n%s", version, err, out)
	}
	model := srv.Get(t, "models", "team-a/iris/run-1/model.json")
	var md modeldir.Metadata
	if err := json.Unmarshal(srv.Get(t, "models", "team-a/iris/run-1/metadata.json"), &md); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(model)
	if md.ModelSHA256 != hex.EncodeToString(sum[:]) || md.WorldSize != 2 || md.Producer != "job-1" {
		t.Fatalf("metadata %+v: want the model object's sha256 %x, world 2, producer job-1", md, sum)
	}
	srv.ResetRequests()
	out, err := train("job-2")
	if err == nil || !strings.Contains(string(out), version+" exists (written by job-1)") {
		t.Fatalf("a second job into the same version: %v\n%s\nwant a refusal naming the version and job-1", err, out)
	}
	for _, r := range srv.Requests() {
		if r.Method == "PUT" || r.Method == "DELETE" || r.Method == "POST" {
			t.Errorf("the refused job wrote: %s %s/%s", r.Method, r.Bucket, r.Key)
		}
	}
	if again := srv.Get(t, "models", "team-a/iris/run-1/model.json"); !bytes.Equal(again, model) {
		t.Fatal("the refused job changed the model")
	}
}
