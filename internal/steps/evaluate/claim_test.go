package evaluate

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Paths on the claim are read with the claim package's rules: a model_uri or test_path that
// leaves the claim, or a claim name that is not a PersistentVolumeClaim's, fails with the rule it
// breaks before the server is called (the URL here answers nothing).
func TestClaimPathsStayOnTheClaim(t *testing.T) {
	base := Options{URL: "http://127.0.0.1:1", Model: "iris", TestPath: "datasets/iris/test.csv", Label: "species",
		Protocol: ProtocolJSON, Timeout: time.Second, Claim: t.TempDir(), ClaimName: "gangboost-models"}
	for _, c := range []struct {
		name   string
		mutate func(*Options)
		want   string
	}{
		{"model_uri with ..", func(o *Options) { o.ModelURI = "pvc://gangboost-models/models/iris/.." }, "must be clean"},
		{"model_uri leaving the claim", func(o *Options) { o.ModelURI = "pvc://gangboost-models/../etc" }, "must stay inside the claim"},
		{"claim-relative model_uri leaving the claim", func(o *Options) { o.ModelURI = "../models/iris/v1" }, "must stay inside the claim"},
		{"test_path leaving the claim", func(o *Options) { o.TestPath = "../../etc/passwd" }, "test_path"},
		{"claim name with a newline", func(o *Options) { o.ClaimName = "gangboost-models\nINFO ok" }, "pvc_name"},
		{"model_uri on another claim", func(o *Options) { o.ModelURI = "pvc://other/models/iris/v1" }, `this step mounts claim "gangboost-models"`},
	} {
		o := base
		c.mutate(&o)
		if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
