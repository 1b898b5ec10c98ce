package cluster

import "testing"

func TestParseServiceHost(t *testing.T) {
	for _, tt := range []struct {
		in       string
		svc, ns  string
		port     int32
		rejected bool
	}{
		{in: "iris-predictor.gangboost.svc.cluster.local", svc: "iris-predictor", ns: "gangboost", port: 80},
		{in: "iris-predictor.gangboost.svc.cluster.local.:8080", svc: "iris-predictor", ns: "gangboost", port: 8080},
		{in: "iris-predictor.gangboost.svc:81", svc: "iris-predictor", ns: "gangboost", port: 81},
		{in: "example.com", rejected: true},
		{in: "iris-predictor.gangboost", rejected: true},
		{in: "a.b.svc:http", rejected: true},
	} {
		svc, ns, port, err := parseServiceHost(tt.in)
		if tt.rejected {
			if err == nil {
				t.Errorf("%s: accepted as %s/%s:%d", tt.in, ns, svc, port)
			}
			continue
		}
		if err != nil || svc != tt.svc || ns != tt.ns || port != tt.port {
			t.Errorf("%s = %s/%s:%d, %v; want %s/%s:%d", tt.in, ns, svc, port, err, tt.ns, tt.svc, tt.port)
		}
	}
}
