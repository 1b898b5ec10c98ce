package pipelines_test

import (
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/gangboost/gangboost/internal/kfp/kfpapi/kfpfake"
	"github.com/gangboost/gangboost/pipelines"
)

// TestKFPUploadKeepsBothDocuments: read as KFP's API server reads an upload (yaml.v3 per
// document, strict protojson), the committed package yields the same PipelineSpec as ours and
// keeps its platform document, with the claim mounted on every step.
func TestKFPUploadKeepsBothDocuments(t *testing.T) {
	b, err := os.ReadFile("xgboost-volcano.yaml")
	if err != nil {
		t.Fatal(err)
	}
	spec, platform, err := kfpfake.ReadPackage(b)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := pipelines.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(spec, ours.Spec) {
		t.Error("KFP's reading of the PipelineSpec differs from ours")
	}
	if platform == nil {
		t.Fatal("KFP dropped the platform document")
	}
	if !proto.Equal(platform, ours.Platform) {
		t.Error("KFP's reading of the platform document differs from ours")
	}
	if n := len(platform.GetPlatforms()["kubernetes"].GetDeploymentSpec().GetExecutors()); n != len(pipelines.Tasks) {
		t.Errorf("platform document configures %d executors, want %d", n, len(pipelines.Tasks))
	}

	// Why the package is checked strictly before it leaves: one unknown field and the server
	// keeps the pipeline but silently loses every mount.
	broken := strings.Replace(string(b), "    deploymentSpec:\n      executors:\n", "    deploymentSpec:\n      executor:\n", 1)
	if broken == string(b) {
		t.Fatal("the replacement did not apply")
	}
	if _, platform, err := kfpfake.ReadPackage([]byte(broken)); err != nil || platform != nil {
		t.Errorf("a platform document with an unknown field: platform %v, err %v; KFP drops it silently", platform, err)
	}
	if _, err := pipelines.Parse([]byte(broken)); err == nil {
		t.Error("pipelines.Parse accepted the platform document KFP would drop")
	}
}
