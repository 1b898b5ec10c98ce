package evaluate

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	if p := Percentile(ds, 50); p != 50*time.Millisecond {
		t.Errorf("p50 = %s", p)
	}
	if p := Percentile(ds, 99); p != 99*time.Millisecond {
		t.Errorf("p99 = %s", p)
	}
	if Percentile(nil, 50) != 0 || Percentile(ds[:1], 99) != 100*time.Millisecond {
		t.Error("edge cases")
	}
}

// TestBearerToken: with auth_token_path every call carries the file's token (read per call, so a
// rotated token is used); without it a refusal says to set it.
func TestBearerToken(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer tok") {
			http.Error(w, "RBAC: access denied", http.StatusForbidden)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"name":"iris","platform":"xgboost"}`))
	}))
	defer srv.Close()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("tok-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &Client{BaseURL: srv.URL, Model: "iris", TokenPath: tokenFile}
	if _, err := c.Metadata(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokenFile, []byte("tok-2"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The answer is no infer response; what counts is the header the call carried.
	_, _ = c.Infer(context.Background(), "1", []float32{1, 2}, 1, 2, nil, false)
	if len(got) != 2 || got[0] != "Bearer tok-1" || got[1] != "Bearer tok-2" {
		t.Errorf("Authorization headers %q, want Bearer tok-1 then Bearer tok-2", got)
	}
	c.TokenPath = ""
	if _, err := c.Metadata(context.Background()); err == nil || !strings.Contains(err.Error(), "403") || !strings.Contains(err.Error(), "set auth_token_path") {
		t.Errorf("without a token: %v, want the 403 and what to set", err)
	}
	c.TokenPath = filepath.Join(t.TempDir(), "missing")
	if _, err := c.Metadata(context.Background()); err == nil || !strings.Contains(err.Error(), "auth_token_path: read the bearer token") {
		t.Errorf("unreadable token file: %v", err)
	}
}
