package prepare

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/gangboost/gangboost/internal/contract/claim"
	"github.com/gangboost/gangboost/internal/contract/dataschema"
	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/plumbing/objectstore"
	"github.com/gangboost/gangboost/internal/steps/storecreds"
)

// The prepare-data component's outputs (components/prepare-data/component.yaml).
const (
	OutputTrainPath  = "train_path"
	OutputTestPath   = "test_path"
	OutputSchemaPath = "schema_path"
	OutputLabel      = "label"
	OutputDataset    = "dataset"
)

// Inputs are the component's input parameters.
var Inputs = []kfp.Input{
	{Name: "dataset", Type: kfp.String, Default: "iris", Description: `"iris" for the built-in Iris, else a CSV with a header (a path on the claim, an absolute path or an http(s) URL), a Parquet file or a folder of part files, or s3://bucket/key, s3://bucket/prefix/ (part files), minio://bucket/key`},
	{Name: "name", Type: kfp.String, Default: "iris", Description: "the data set's folder: datasets/<name>/ on the claim"},
	{Name: "label", Type: kfp.String, Default: "", Description: "the CSV's label column (required for a CSV; Iris: species)"},
	{Name: "test_fraction", Type: kfp.Double, Default: 0.2, Description: "fraction of the rows held out as test.csv (per class for class labels)"},
	{Name: "seed", Type: kfp.Integer, Default: 42, Description: "seed of the split: the same seed gives the same files"},
	{Name: "pvc_name", Type: kfp.String, Default: "gangboost-models", Description: "the PersistentVolumeClaim holding data and models"},
	{Name: "pvc_mount_path", Type: kfp.String, Default: "/mnt/pvc", Description: "where this step mounts the claim"},
	{Name: "max_download_bytes", Type: kfp.Integer, Default: DefaultMaxDownloadBytes, Description: "most bytes an http(s) data set may send (as sent, before gzip is decoded)"},
	{Name: "max_gzip_ratio", Type: kfp.Integer, Default: DefaultMaxGzipRatio, Description: "most times larger than its compressed size gzip data may get (a decompression bomb gets a thousand)"},
	{Name: "download_timeout_seconds", Type: kfp.Integer, Default: int(DefaultDownloadTimeout / time.Second), Description: "how long reading an http(s) data set may take in all"},
	{Name: "stall_timeout_seconds", Type: kfp.Integer, Default: int(DefaultStallTimeout / time.Second), Description: "how long the server of an http(s) data set may keep the step waiting for its answer, then for each 16 KiB of its body"},
	{Name: "object_store_endpoint", Type: kfp.String, Default: "", Description: "endpoint of s3:// data: host:port, http://host:port or https://host:port; default AWS S3, for minio:// http://minio-service.kubeflow:9000; credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (kfp-kubernetes use_secret_as_env)"},
	{Name: "object_store_region", Type: kfp.String, Default: "", Description: "object store region; default the bucket's"},
	{Name: "object_store_path_style", Type: kfp.String, Default: "false", Description: "true: address buckets as endpoint/bucket (MinIO, Ceph)"},
	{Name: "max_matrix_bytes", Type: kfp.Integer, Default: 0, Description: "most bytes the parsed rows may take as a dense matrix (rows x features x 4 bytes), checked as they are parsed; 0: an eighth of the memory the step may take"},
}

func init() { Inputs = append(Inputs, storecreds.Inputs...) }

// Component is the prepare-data component run from image; component.yaml is generated from it.
func Component(image string) *kfp.Component {
	return &kfp.Component{
		Name:        "prepare-data",
		Description: "Splits a data set (built-in Iris, or a CSV on the claim or at a URL) into datasets/<name>/train.csv, test.csv and schema.json on the claim.",
		Image:       image,
		Inputs:      Inputs,
		Outputs: []kfp.Output{
			{Name: OutputTrainPath, Type: kfp.String, Description: "train.csv, claim-relative (launch-xgboostjob's train_data)"},
			{Name: OutputTestPath, Type: kfp.String, Description: "test.csv, claim-relative (launch-xgboostjob's eval_data, evaluate's test_path)"},
			{Name: OutputSchemaPath, Type: kfp.String, Description: "schema.json, claim-relative (launch-xgboostjob's data_schema: it names the categories of categorical columns)"},
			{Name: OutputLabel, Type: kfp.String, Description: "the label column"},
			{Name: OutputDataset, Artifact: "system.Dataset", Description: "schema.json, with rows, train_rows, test_rows, columns, label and classes as metadata"},
		},
	}
}

// RunExecutor runs the component: it reads the ExecutorInput's parameters, prepares the data set
// and writes the outputs. secrets reads object_store_secret when the data set is in an object
// store and the environment has no credentials.
func RunExecutor(ctx context.Context, e *kfp.Executor, fetch Fetcher, secrets storecreds.Reader, log io.Writer) error {
	in := e.Params(Inputs)
	str := in.String
	fraction := in.Float("test_fraction", 0.2)
	seed := in.Int("seed", 42)
	o := Options{
		Dataset: str("dataset", "iris"), Name: str("name", "iris"), Label: str("label", ""),
		TestFraction: fraction, Seed: seed, Claim: str("pvc_mount_path", "/mnt/pvc"), Fetch: fetch, Log: log,
		ObjectStore: objectstore.FromInputs(str),
	}
	claimName := str("pvc_name", "gangboost-models")
	secret := storecreds.FromInputs(str)
	var errs []error
	positive := func(name string, def int64) int64 {
		v := in.Int(name, def)
		if v <= 0 {
			errs = append(errs, fmt.Errorf("%s = %d: want a positive number (default %d)", name, v, def))
		}
		return v
	}
	o.Limits = Limits{
		MaxDownloadBytes: positive("max_download_bytes", DefaultMaxDownloadBytes),
		MaxGzipRatio:     positive("max_gzip_ratio", DefaultMaxGzipRatio),
		DownloadTimeout:  time.Duration(positive("download_timeout_seconds", int64(DefaultDownloadTimeout/time.Second))) * time.Second,
		StallTimeout:     time.Duration(positive("stall_timeout_seconds", int64(DefaultStallTimeout/time.Second))) * time.Second,
	}
	if o.Limits.MaxMatrixBytes = in.Int("max_matrix_bytes", 0); o.Limits.MaxMatrixBytes < 0 {
		errs = append(errs, fmt.Errorf("max_matrix_bytes = %d: want a number of bytes, or 0 for an eighth of the memory the step may take", o.Limits.MaxMatrixBytes))
	}
	if err := errors.Join(append(errs, in.Err())...); err != nil {
		return err
	}
	// The claim's name goes into the outputs; a bad one must fail before the split is written.
	if err := claim.CheckName(claimName); err != nil {
		return err
	}
	if err := secret.Apply(ctx, secrets, o.Dataset, &o.ObjectStore, log); err != nil {
		return err
	}
	limitHeap()
	res, err := Run(ctx, o)
	if err != nil {
		return err
	}
	return writeOutputs(e, res, claimName)
}

func writeOutputs(e *kfp.Executor, res *Result, claimName string) error {
	location, err := claim.NewURI(claimName, path.Dir(res.TrainPath))
	if err != nil {
		return err
	}
	s := res.Schema
	for name, v := range map[string]string{OutputTrainPath: res.TrainPath, OutputTestPath: res.TestPath, OutputSchemaPath: res.SchemaPath, OutputLabel: s.Label} {
		if err := e.SetParameter(name, v); err != nil {
			return err
		}
	}
	columns, classes, categorical := make([]any, len(s.Columns)), make([]any, len(s.Classes)), []any{}
	for i, c := range s.Columns {
		columns[i] = c.Name
		if c.Type == dataschema.TypeCategory {
			categorical = append(categorical, c.Name)
		}
	}
	for i, c := range s.Classes {
		classes[i] = c
	}
	md := map[string]any{
		"rows": s.Rows, "train_rows": s.TrainRows, "test_rows": s.TestRows,
		"columns": columns, "categorical": categorical, "label": s.Label, "label_type": s.LabelType, "classes": classes,
		"source": s.Source, "test_fraction": s.TestFraction, "seed": s.Seed, "stratified": s.Stratified,
		"train_path": res.TrainPath, "test_path": res.TestPath,
		// Where the files are: the artifact itself holds schema.json, which the UI can show.
		"location": location.String(),
	}
	if err := e.SetArtifact(OutputDataset, "", md); err != nil {
		return err
	}
	p, err := e.OutputArtifactPath(OutputDataset)
	if err != nil {
		return err
	}
	js, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("write artifact %s: %w", OutputDataset, err)
	}
	if err := os.WriteFile(p, append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("write artifact %s: %w", OutputDataset, err)
	}
	return e.WriteOutput()
}
