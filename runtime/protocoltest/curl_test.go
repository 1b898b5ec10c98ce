package protocoltest

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// curl runs curl and returns the status code and body.
func curl(t *testing.T, args ...string) (int, string) {
	t.Helper()
	out, err := exec.Command("curl", append([]string{"-sS", "-w", "\n%{http_code}"}, args...)...).Output()
	if err != nil {
		t.Fatalf("curl %v: %v", args, err)
	}
	s := string(out)
	i := strings.LastIndexByte(s, '\n')
	code, _ := strconv.Atoi(s[i+1:])
	return code, s[:i]
}

func TestEveryEndpointWithCurl(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is required (apt-get install curl)")
	}
	s := startIris(t)
	row := `{"id":"r1","inputs":[{"name":"input-0","shape":[2,4],"datatype":"FP32","data":[[5.1,3.5,1.4,0.2],[6.7,3.0,5.2,2.3]]}]}`
	cases := []struct {
		name   string
		args   []string
		status int
		want   []string
	}{
		{"root live", []string{s.URL + "/"}, 200, []string{`{"status":"alive"}`}},
		{"live", []string{s.URL + "/v2/health/live"}, 200, []string{`"live":true`}},
		{"ready", []string{s.URL + "/v2/health/ready"}, 200, []string{`"ready":true`}},
		{"server metadata", []string{s.URL + "/v2"}, 200, []string{`"name":"gangboost"`, `"binary_tensor_data"`}},
		{"server metadata slash", []string{s.URL + "/v2/"}, 200, []string{`"extensions"`}},
		{"model list", []string{s.URL + "/v2/models"}, 200, []string{`"models":["iris"]`}},
		{"model metadata", []string{s.URL + "/v2/models/iris"}, 200, []string{`"name":"iris"`, `"platform":"xgboost"`, `"shape":[-1,4]`, `"output-0"`, `"predict_proba"`, `"contribs"`}},
		{"model metadata version", []string{s.URL + "/v2/models/iris/versions/1"}, 200, []string{`"versions":["1"]`}},
		{"model ready", []string{s.URL + "/v2/models/iris/ready"}, 200, []string{`"ready":true`}},
		{"model ready version", []string{s.URL + "/v2/models/iris/versions/1/ready"}, 200, []string{`"ready":true`}},
		{"infer", []string{"-X", "POST", "-H", "Content-Type: application/json", "-d", row, s.URL + "/v2/models/iris/infer"}, 200,
			[]string{`"model_name":"iris"`, `"id":"r1"`, `"name":"output-0"`, `"shape":[2,3]`, `"datatype":"FP32"`}},
		{"infer version", []string{"-X", "POST", "-d", row, s.URL + "/v2/models/iris/versions/1/infer"}, 200, []string{`"model_version":"1"`}},
		{"infer all outputs", []string{"-X", "POST", "-d", `{"inputs":[{"name":"x","shape":[1,4],"datatype":"FP64","data":[5.1,3.5,1.4,0.2]}],` +
			`"outputs":[{"name":"output-0"},{"name":"predict"},{"name":"predict_proba"},{"name":"margin"},{"name":"leaf"},{"name":"contribs"}]}`,
			s.URL + "/v2/models/iris/infer"}, 200,
			[]string{`"name":"predict","shape":[1],"datatype":"INT64","data":[0]`, `"name":"predict_proba","shape":[1,3]`, `"name":"margin","shape":[1,3]`,
				`"name":"leaf","shape":[1,60]`, `"name":"contribs","shape":[1,3,5]`}},
		{"v1 predict", []string{"-X", "POST", "-d", `{"instances":[[5.1,3.5,1.4,0.2]]}`, s.URL + "/v1/models/iris:predict"}, 200, []string{`"predictions":[[`}},
		{"v1 model", []string{s.URL + "/v1/models/iris"}, 200, []string{`"ready":true`}},
		{"v1 list", []string{s.URL + "/v1/models"}, 200, []string{`"iris"`}},
		{"unload", []string{"-X", "POST", s.URL + "/v2/repository/models/iris/unload"}, 200, []string{`"unload":true`}},
		{"ready after unload", []string{s.URL + "/v2/models/iris/ready"}, 503, []string{`unloaded`}},
		{"infer after unload", []string{"-X", "POST", "-d", row, s.URL + "/v2/models/iris/infer"}, 503, []string{`"error":"model iris is unloaded`}},
		{"load", []string{"-X", "POST", s.URL + "/v2/repository/models/iris/load"}, 200, []string{`"load":true`}},
		{"ready after load", []string{s.URL + "/v2/models/iris/ready"}, 200, []string{`"ready":true`}},
		{"metrics", []string{s.URL + "/metrics"}, 200, []string{`gangboost_requests_total{model="iris",protocol="v2",status="200"}`, `gangboost_request_duration_seconds_bucket`, `gangboost_batch_rows_bucket`}},
	}
	for _, c := range cases {
		code, body := curl(t, c.args...)
		if code != c.status || !contains(body, c.want...) {
			t.Errorf("%s: status %d body %s\nwant status %d containing %q", c.name, code, body, c.status, c.want)
		}
	}
}
