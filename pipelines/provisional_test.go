package pipelines

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/version"
)

var provisional = flag.Bool("provisional", false, "write component.yaml for the components that have none yet, from the component contract")

// provisionalHeader marks a component.yaml written from the contract, not by its component's own
// definition; the component's generated spec replaces it.
const provisionalHeader = "# PROVISIONAL: replaced by the component's generated spec\n"

// claimInputs are the inputs of every component that touches the claim.
var claimInputs = []kfp.Input{
	{Name: "pvc_name", Type: kfp.String, Default: "gangboost-models", Description: "the PersistentVolumeClaim holding data and models"},
	{Name: "pvc_mount_path", Type: kfp.String, Default: "/mnt/pvc", Description: "where this step sees the claim"},
}

// contractComponents are the components of the shared contract that the pipeline composes, as
// the contract states their inputs and outputs.
var contractComponents = []kfp.Component{
	{
		Name:        "prepare-data",
		Description: "Splits a data set (built-in Iris, or a CSV at a path on the claim or an http(s) URL) into train and test CSVs on the claim.",
		Inputs: append([]kfp.Input{
			{Name: "dataset", Type: kfp.String, Default: "iris", Description: "iris, or a CSV: a path on the claim, an absolute path or an http(s) URL"},
			{Name: "name", Type: kfp.String, Default: "iris", Description: "the data set's folder name under datasets/"},
			{Name: "label", Type: kfp.String, Default: "", Description: "the label column of a CSV (required then); Iris: species"},
			{Name: "test_fraction", Type: kfp.Double, Default: 0.2, Description: "fraction of rows held out for testing"},
			{Name: "seed", Type: kfp.Integer, Default: 42, Description: "seed of the split"},
		}, claimInputs...),
		Outputs: []kfp.Output{
			{Name: "train_path", Type: kfp.String},
			{Name: "test_path", Type: kfp.String},
			{Name: "label", Type: kfp.String},
			{Name: "dataset", Artifact: "system.Dataset"},
		},
	},
	{
		Name:        "deploy-inferenceservice",
		Description: "Creates or updates a KServe InferenceService serving model_uri and waits until it is Ready.",
		Inputs: append([]kfp.Input{
			{Name: "name", Type: kfp.String, Description: "the InferenceService name"},
			{Name: "namespace", Type: kfp.String, Default: "", Description: "default this step's namespace"},
			{Name: "model_uri", Type: kfp.String, Description: "pvc://<claim>/<path> of the model"},
			{Name: "runtime", Type: kfp.String, Default: "gangboost-xgboost"},
			{Name: "protocol_version", Type: kfp.String, Default: "v2"},
			{Name: "cpu", Type: kfp.String, Default: "1"},
			{Name: "memory", Type: kfp.String, Default: "1Gi"},
			{Name: "min_replicas", Type: kfp.Integer, Default: 1},
			{Name: "max_replicas", Type: kfp.Integer, Default: 1},
			{Name: "timeout_seconds", Type: kfp.Integer, Default: 300},
		}, claimInputs...),
		Outputs: []kfp.Output{
			{Name: "url", Type: kfp.String},
			{Name: "external_url", Type: kfp.String},
			{Name: "grpc_address", Type: kfp.String},
			{Name: "model_name", Type: kfp.String},
		},
	},
	{
		Name:        "evaluate",
		Description: "Sends the test set to the served model with the V2 protocol and checks its predictions.",
		Inputs: append([]kfp.Input{
			{Name: "url", Type: kfp.String},
			{Name: "model_name", Type: kfp.String},
			{Name: "test_path", Type: kfp.String},
			{Name: "label", Type: kfp.String},
			{Name: "model_uri", Type: kfp.String, Default: ""},
			{Name: "tolerance", Type: kfp.Double, Default: 0.02},
			{Name: "protocol", Type: kfp.String, Default: "both"},
			{Name: "timeout_seconds", Type: kfp.Integer, Default: 120},
		}, claimInputs...),
		Outputs: []kfp.Output{
			{Name: "metrics", Artifact: "system.Metrics"},
			{Name: "confusion_matrix", Artifact: "system.ClassificationMetrics"},
			{Name: "report", Artifact: "system.HTML"},
			{Name: "accuracy", Type: kfp.Double},
			{Name: "rmse", Type: kfp.Double},
		},
	},
}

// TestProvisionalComponents writes (with -provisional) the component.yaml of each contract
// component that has none, or only a provisional one; a component's own generated file is never
// touched.
func TestProvisionalComponents(t *testing.T) {
	if !*provisional {
		t.Skip("run with -provisional to write the contract components' missing component.yaml")
	}
	for _, c := range contractComponents {
		c.Image = version.Image("gangboost")
		path := filepath.Join("..", "components", c.Name, "component.yaml")
		if old, err := os.ReadFile(path); err == nil && !bytes.HasPrefix(old, []byte(provisionalHeader)) {
			t.Logf("%s is the component's own spec: kept", path)
			continue
		}
		y, err := c.YAML("the component contract: go test ./pipelines -run TestProvisionalComponents -provisional")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append([]byte(provisionalHeader), y...), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", path)
	}
}
