// Package storageinit is gangboost's KServe storage initializer for s3:// model URIs: the init
// container KServe runs before the runtime (registered through a ClusterStorageContainer) to
// fill the model directory. It downloads with KServe's own Go storage package
// (pkg/agent/storage, what KServe's model agent uses), then checks the folder against its
// metadata.json: the model file's sha256 must be the one its trainer recorded, or the pod never
// starts serving. A folder without metadata.json (a model not written by gangboost) is downloaded
// as it is, and the log says that nothing was checked.
package storageinit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go/aws"
	"github.com/aws/aws-sdk-go/aws/awserr"
	"github.com/aws/aws-sdk-go/service/s3"
	"github.com/aws/aws-sdk-go/service/s3/s3iface"
	"github.com/kserve/kserve/pkg/agent/storage"

	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/internal/contract/modelobjects"
)

// Limits bound what a download may take before any byte is written.
type Limits struct {
	// MaxBytes bounds the folder's total size; MaxObjects its number of objects.
	MaxBytes   int64
	MaxObjects int
}

// DefaultLimits: a model folder is a model file and its metadata, a few GiB at the most.
var DefaultLimits = Limits{MaxBytes: 16 << 30, MaxObjects: 100}

// listPage is what one S3 listing returns at most, and all that KServe's downloader reads: a
// folder of more objects would be downloaded in part.
const listPage = 1000

// Result is what was downloaded and checked.
type Result struct {
	Files []string
	Bytes int64
	// Verified is true when metadata.json was there and the model file matched its sha256.
	Verified bool
	SHA256   string
	Took     time.Duration
}

// Download fills dest with the model at uri (s3://bucket/prefix/ of a model folder, or
// s3://bucket/key of one model file) and checks it. Credentials and endpoint come from the
// environment KServe gives storage initializers (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_ENDPOINT_URL or S3_ENDPOINT with S3_USE_HTTPS, AWS_DEFAULT_REGION, S3_USER_VIRTUAL_BUCKET).
func Download(ctx context.Context, uri, dest string, lim Limits, log *slog.Logger) (*Result, error) {
	start := time.Now()
	rest, ok := strings.CutPrefix(uri, string(storage.S3))
	bucket, key, _ := strings.Cut(rest, "/")
	if !ok || bucket == "" || key == "" {
		return nil, fmt.Errorf("storage URI %q: want s3://<bucket>/<prefix>/ of a model folder or s3://<bucket>/<key> of a model file", uri)
	}
	if os.Getenv("AWS_DEFAULT_REGION") == "" && os.Getenv("AWS_REGION") == "" {
		// The SDK needs a region to sign; S3-compatible stores ignore it.
		os.Setenv("AWS_DEFAULT_REGION", "us-east-1")
	}
	if ep := os.Getenv("S3_ENDPOINT"); ep != "" && os.Getenv("AWS_ENDPOINT_URL") == "" {
		scheme := "https://"
		if os.Getenv("S3_USE_HTTPS") == "0" {
			scheme = "http://"
		}
		os.Setenv("AWS_ENDPOINT_URL", scheme+ep)
	}
	p, err := storage.GetProvider(map[storage.Protocol]storage.Provider{}, storage.S3)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", uri, err)
	}
	s3p, ok := p.(*storage.S3Provider)
	if !ok {
		return nil, fmt.Errorf("%s: KServe's storage package gave no S3 provider", uri)
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return nil, err
	}
	files, size, folderURI, err := list(ctx, s3p.Client, uri, bucket, key, lim)
	if err != nil {
		return nil, err
	}
	log.Info("downloading", "uri", uri, "objects", len(files), "bytes", size, "dest", dest)
	res := &Result{Files: files, Bytes: size}
	if folderURI != "" {
		if err := s3p.DownloadModel(dest, "", folderURI); err != nil {
			return nil, explain(uri, "download", err)
		}
	} else if err := downloadObject(ctx, s3p.Client, bucket, key, filepath.Join(dest, path.Base(key))); err != nil {
		return nil, explain(uri, "download", err)
	}
	if res.SHA256, res.Verified, err = verify(uri, dest); err != nil {
		return nil, err
	}
	if !res.Verified && folderURI != "" {
		if err := refuseIncomplete(ctx, s3p.Client, folderURI, bucket, strings.TrimPrefix(folderURI, "s3://"+bucket+"/"), files); err != nil {
			return nil, err
		}
	}
	res.Took = time.Since(start)
	if res.Verified {
		log.Info("model verified", "uri", uri, "sha256", res.SHA256, "bytes", size, "took", res.Took.Round(time.Millisecond))
	} else {
		log.Warn("no metadata.json: the files were downloaded as they are and nothing was checked", "uri", uri, "bytes", size)
	}
	return res, nil
}

// list finds what uri names: the objects under a folder prefix, or one object, within lim. A
// folder's object keys must stay inside it once joined to the destination (KServe's downloader
// joins them as they are).
func list(ctx context.Context, c s3iface.S3API, uri, bucket, key string, lim Limits) (files []string, size int64, folderURI string, err error) {
	if !strings.HasSuffix(key, "/") {
		head, err := c.HeadObjectWithContext(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err == nil {
			n := aws.Int64Value(head.ContentLength)
			if n > lim.MaxBytes {
				return nil, 0, "", fmt.Errorf("%s is %d bytes, more than the %d a model may have (--max-bytes)", uri, n, lim.MaxBytes)
			}
			return []string{path.Base(key)}, n, "", nil
		}
		if !notFound(err) {
			return nil, 0, "", explain(uri, "stat", err)
		}
		key += "/"
		uri += "/"
	}
	out, err := c.ListObjectsV2WithContext(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(key), MaxKeys: aws.Int64(listPage)})
	if err != nil {
		return nil, 0, "", explain(uri, "list", err)
	}
	if aws.BoolValue(out.IsTruncated) {
		return nil, 0, "", fmt.Errorf("%s holds more than %d objects: not a model folder (KServe's downloader would take only the first %d)", uri, listPage, listPage)
	}
	for _, o := range out.Contents {
		k := aws.StringValue(o.Key)
		if strings.HasSuffix(k, "/") {
			continue
		}
		rel := strings.TrimPrefix(k, key)
		if rel == "" || path.IsAbs(rel) || path.Clean(rel) != rel || rel == ".." || strings.HasPrefix(rel, "../") {
			return nil, 0, "", fmt.Errorf("%s: object key %q would land outside the model directory", uri, k)
		}
		files = append(files, rel)
		size += aws.Int64Value(o.Size)
	}
	switch {
	case len(files) == 0:
		return nil, 0, "", fmt.Errorf("%s: no objects under this prefix: check the storageUri (bucket %q, prefix %q)", uri, bucket, key)
	case len(files) > lim.MaxObjects:
		return nil, 0, "", fmt.Errorf("%s holds %d objects, more than the %d a model folder may have (--max-objects)", uri, len(files), lim.MaxObjects)
	case size > lim.MaxBytes:
		return nil, 0, "", fmt.Errorf("%s holds %d bytes, more than the %d a model may have (--max-bytes)", uri, size, lim.MaxBytes)
	}
	return files, size, uri, nil
}

// downloadObject writes one object to file.
func downloadObject(ctx context.Context, c s3iface.S3API, bucket, key, file string) error {
	out, err := c.GetObjectWithContext(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return err
	}
	defer out.Body.Close()
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, out.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// verify checks dest against its metadata.json: the model file it names must be there with the
// sha256 it records. No metadata.json: nothing to check (verified false).
func verify(uri, dest string) (sum string, verified bool, err error) {
	b, err := os.ReadFile(filepath.Join(dest, modeldir.MetadataFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	var md modeldir.Metadata
	if err := json.Unmarshal(b, &md); err != nil {
		return "", false, fmt.Errorf("%s%s: %w", folder(uri), modeldir.MetadataFile, err)
	}
	if err := md.CheckModelFile(); err != nil {
		return "", false, fmt.Errorf("%s%w", folder(uri), err)
	}
	f, err := os.Open(filepath.Join(dest, md.ModelFile))
	if err != nil {
		return "", false, fmt.Errorf("%s%s names %s, which was not downloaded: %w", folder(uri), modeldir.MetadataFile, md.ModelFile, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", false, err
	}
	got := hex.EncodeToString(h.Sum(nil))
	if got != md.ModelSHA256 {
		return "", false, &modelobjects.DigestError{Object: folder(uri) + md.ModelFile, Want: md.ModelSHA256, Got: got}
	}
	return got, true, nil
}

// refuseIncomplete fails a folder without metadata.json that gangboost's trainer wrote to (its
// objects carry the writer's sha256 as user metadata): an upload that stopped before its last
// object is no model version, and serving its model file would serve what nobody published.
func refuseIncomplete(ctx context.Context, c s3iface.S3API, uri, bucket, prefix string, files []string) error {
	for _, f := range files {
		head, err := c.HeadObjectWithContext(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(prefix + f)})
		if err != nil {
			return explain(uri, "stat "+f, err)
		}
		for k := range head.Metadata {
			if strings.EqualFold(k, modelobjects.SHA256Meta) {
				return fmt.Errorf("%s is no complete model version: %s was written by gangboost, but the folder has no %s (an upload that stopped before its last object); the model is not served", uri, f, modeldir.MetadataFile)
			}
		}
	}
	return nil
}

func folder(uri string) string {
	if strings.HasSuffix(uri, "/") {
		return uri
	}
	return uri + "/"
}

func notFound(err error) bool {
	var ae awserr.RequestFailure
	if errors.As(err, &ae) {
		return ae.StatusCode() == 404 && ae.Code() != "NoSuchBucket"
	}
	return false
}

// explain says what a failed request on uri means.
func explain(uri, what string, err error) error {
	var ae awserr.Error
	if errors.As(err, &ae) {
		switch ae.Code() {
		case "NoSuchBucket":
			return fmt.Errorf("%s: %s: the bucket does not exist at this endpoint (AWS_ENDPOINT_URL %q): check the storageUri and the service account's s3-endpoint", uri, what, os.Getenv("AWS_ENDPOINT_URL"))
		case "InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "Forbidden":
			return fmt.Errorf("%s: %s: the object store refused the credentials (%s): check the secret of the InferenceService's service account (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)", uri, what, ae.Code())
		}
	}
	return fmt.Errorf("%s: %s: %w", uri, what, err)
}
