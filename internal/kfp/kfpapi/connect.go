package kfpapi

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"
)

// TokenFile is where a pod that may call KFP's API finds its projected service account token
// (audience pipelines.kubeflow.org).
var TokenFile = "/var/run/secrets/kubeflow/pipelines/token"

// Connect is a client of the API server at host (an http:// or https:// URL) that sends token,
// else $KFP_TOKEN, else TokenFile's content when the file exists, else no token.
func Connect(host, token string) (*Client, error) {
	if host == "" {
		return nil, errors.New("--host is required (or set KFP_HOST)")
	}
	if !strings.HasPrefix(host, "http://") && !strings.HasPrefix(host, "https://") {
		return nil, fmt.Errorf("--host %q: want an http:// or https:// URL", host)
	}
	if token == "" {
		token = os.Getenv("KFP_TOKEN")
	}
	if token == "" {
		if b, err := os.ReadFile(TokenFile); err == nil {
			token = strings.TrimSpace(string(b))
		}
	}
	return &Client{Host: host, Token: token, HTTP: &http.Client{Timeout: 2 * time.Minute}}, nil
}
