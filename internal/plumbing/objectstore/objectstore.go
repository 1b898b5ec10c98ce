// Package objectstore reaches S3-compatible object stores (AWS S3, MinIO, Ceph, SeaweedFS) the one
// way every part of gangboost does: s3:// and minio:// URIs, the endpoint rules, credentials from
// the AWS_* environment, and errors that say what to check.
package objectstore

import (
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Config says how to reach the store. Credentials come from the environment
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), which a Kubernetes Secret fills
// the way Kubeflow Pipelines' own mlpipeline-minio-artifact secret does.
type Config struct {
	// Endpoint is host:port or a URL; an http:// URL means plain HTTP (an in-cluster MinIO).
	// Empty: s3.amazonaws.com, or for minio:// URIs Kubeflow Pipelines' in-cluster MinIO.
	Endpoint string
	Region   string
	// PathStyle addresses buckets as endpoint/bucket (MinIO, Ceph) instead of bucket.endpoint.
	PathStyle bool
	// Insecure talks plain HTTP to an endpoint given without a scheme.
	Insecure bool
	// Credentials, when set, sign the requests instead of the AWS_* environment: the key pair
	// a step read from a Secret (object_store_secret). Never serialized.
	Credentials *Credentials `json:"-"`
}

// Credentials are an access key pair and where it came from, for messages (e.g. "Secret
// team-a/mlpipeline-minio-artifact").
type Credentials struct {
	AccessKey, SecretKey string
	From                 string
}

// CanSign reports whether requests through cfg are signed: Credentials are set, or the
// environment has them.
func (cfg Config) CanSign() bool { return cfg.Credentials != nil || HasEnvCredentials() }

// FromInputs is the store the steps' inputs object_store_endpoint, object_store_region and
// object_store_path_style ("true" or not) name; get reads an input's value, or def.
func FromInputs(get func(name, def string) string) Config {
	return Config{Endpoint: get("object_store_endpoint", ""), Region: get("object_store_region", ""),
		PathStyle: get("object_store_path_style", "false") == "true"}
}

// KFPMinIOEndpoint is the in-cluster MinIO service of a Kubeflow Pipelines install, where a
// minio:// artifact URI points when no endpoint is given.
const KFPMinIOEndpoint = "http://minio-service.kubeflow:9000"

// IsURI reports whether p names something in an object store (s3:// or minio://).
func IsURI(p string) bool {
	return strings.HasPrefix(p, "s3://") || strings.HasPrefix(p, "minio://")
}

// Location is a parsed s3:// or minio:// URI.
type Location struct {
	Scheme, Bucket string
	// Key is the object's key or a prefix (ending in "/"); "" for the whole bucket.
	Key string
}

// ParseURI splits scheme://bucket/key.
func ParseURI(uri string) (Location, error) {
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok || (scheme != "s3" && scheme != "minio") {
		return Location{}, fmt.Errorf("%q is not an object store URI: want s3://bucket/key or minio://bucket/key", uri)
	}
	bucket, key, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return Location{}, fmt.Errorf("%s: no bucket: want %s://bucket/key or %s://bucket/prefix/", uri, scheme, scheme)
	}
	return Location{Scheme: scheme, Bucket: bucket, Key: key}, nil
}

// URI is the location as scheme://bucket/key.
func (l Location) URI() string { return l.Scheme + "://" + l.Bucket + "/" + l.Key }

// HasEnvCredentials reports whether this process can sign requests: AWS_ACCESS_KEY_ID is set. A
// step without it leaves checks of an object store to the pods that get the credentials.
func HasEnvCredentials() bool { return os.Getenv("AWS_ACCESS_KEY_ID") != "" }

// Client is a store's client, the endpoint it talks to and whose key signs its requests, for
// messages.
type Client struct {
	*minio.Client
	Endpoint string
	// Signer says whose key signs the requests ("" when none does).
	Signer string
}

// New returns a client of the store a URI of scheme ("s3" or "minio") lives in. appInfo goes into
// the User-Agent ("gangboost <appInfo>"), so that the store's access log tells who did what.
func New(cfg Config, scheme, appInfo string) (*Client, error) {
	endpoint, secure := cfg.Endpoint, !cfg.Insecure
	if endpoint == "" {
		endpoint = "s3.amazonaws.com"
		if scheme == "minio" {
			endpoint = KFPMinIOEndpoint
			cfg.PathStyle = true
		}
	}
	if strings.Contains(endpoint, "://") {
		u, err := url.Parse(endpoint)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || (u.Path != "" && u.Path != "/") {
			return nil, fmt.Errorf("object store endpoint %q: want host:port, http://host:port or https://host:port", cfg.Endpoint)
		}
		endpoint, secure = u.Host, u.Scheme == "https"
	}
	lookup := minio.BucketLookupAuto
	if cfg.PathStyle {
		lookup = minio.BucketLookupPath
	}
	// Environment credentials only (no instance metadata lookups that hang outside AWS); without
	// them requests go unsigned, which a public bucket accepts and a private one refuses with a
	// message naming the variables.
	creds, signer := credentials.NewEnvAWS(), ""
	if HasEnvCredentials() {
		signer = "the access key in AWS_ACCESS_KEY_ID"
	}
	if c := cfg.Credentials; c != nil {
		creds, signer = credentials.NewStaticV4(c.AccessKey, c.SecretKey, ""), "the access key of "+c.From
	}
	cl, err := minio.New(endpoint, &minio.Options{
		Creds:        creds,
		Secure:       secure,
		Region:       cfg.Region,
		BucketLookup: lookup,
	})
	if err != nil {
		return nil, fmt.Errorf("object store endpoint %q: %w", endpoint, err)
	}
	if appInfo != "" {
		cl.SetAppInfo("gangboost", appInfo)
	}
	return &Client{Client: cl, Endpoint: cl.EndpointURL().String(), Signer: signer}, nil
}

// Explain says what a failed request on uri (doing what, e.g. "read model.json") means and what
// to do.
func (c *Client) Explain(uri, what string, err error) error {
	resp := minio.ToErrorResponse(err)
	where := fmt.Sprintf("%s (endpoint %s)", uri, c.Endpoint)
	switch resp.Code {
	case "AccessDenied":
		if c.Signer == "" {
			return fmt.Errorf("%s: %s: the object store refused the credentials: none are set, the request went unsigned (%s: %s): give object_store_secret (a Secret of the run's namespace; Kubeflow creates mlpipeline-minio-artifact in each profile) or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
				where, what, resp.Code, resp.Message)
		}
		bucket, key := resp.BucketName, resp.Key
		if l, perr := ParseURI(uri); perr == nil {
			bucket, key = l.Bucket, l.Key
		}
		return fmt.Errorf("%s: %s: the object store denied it to %s (%s: %s): the key's policy does not allow bucket %q, key %q. On Kubeflow each profile's key may use only s3://mlpipeline/private-artifacts/<namespace>/..., private/<namespace>/..., artifacts/... and shared/...: put the data under one of them, or have the store's admin extend the policy",
			where, what, c.Signer, resp.Code, resp.Message, bucket, key)
	case "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken":
		creds := c.Signer
		if creds == "" {
			creds = "no credentials are set"
		}
		return fmt.Errorf("%s: %s: the object store refused the credentials (%s: %s); %s: check the Secret named by object_store_secret (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)",
			where, what, resp.Code, resp.Message, creds)
	case "NoSuchBucket":
		bucket := resp.BucketName
		if l, perr := ParseURI(uri); perr == nil {
			bucket = l.Bucket
		}
		return fmt.Errorf("%s: %s: bucket %q does not exist at this endpoint: check the bucket name, the endpoint (object_store_endpoint, --s3-endpoint) and the region", where, what, bucket)
	case "NoSuchKey":
		return fmt.Errorf("%s: %s: no such object", where, what)
	}
	return fmt.Errorf("%s: %s: %w", where, what, err)
}

// IsNotFound reports whether err says the object (or key) does not exist.
func IsNotFound(err error) bool {
	resp := minio.ToErrorResponse(err)
	return resp.Code == "NoSuchKey" || resp.Code == "NotFound" || resp.StatusCode == 404 && resp.Code != "NoSuchBucket"
}

// IsPreconditionFailed reports whether a conditional write found the object there (If-None-Match).
func IsPreconditionFailed(err error) bool {
	resp := minio.ToErrorResponse(err)
	return resp.Code == "PreconditionFailed" || resp.StatusCode == 412
}
