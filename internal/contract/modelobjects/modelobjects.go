// Package modelobjects is the model folder contract (package modeldir) in an object store: a
// version is the prefix s3://<bucket>/<prefix>/<model>/<version>/ holding the model file and
// metadata.json, written in that order, each only where no object of its name exists, so that
// metadata.json appears last and once. A reader trusts a version only through its metadata.json:
// an upload that stopped before it leaves nothing a reader takes for a model, and a version that
// has one is never replaced except on purpose (overwrite).
package modelobjects

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/gangboost/gangboost/internal/contract/claim"
	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/internal/plumbing/objectstore"
)

// Scheme is the only scheme a model store URI may have: KServe's storage initializers resolve
// s3://, not minio:// (which only Kubeflow Pipelines' artifact URIs use).
const Scheme = "s3://"

// ProducerMeta is the user metadata (x-amz-meta-gangboost-producer) naming the job that wrote a
// model object, so a retried job may replace the model object its own interrupted attempt left.
const ProducerMeta = "Gangboost-Producer"

// SHA256Meta is the user metadata (x-amz-meta-gangboost-sha256) holding an object's SHA-256 as
// its writer computed it.
const SHA256Meta = "Gangboost-Sha256"

// requestTimeout bounds one metadata request; model bodies are bounded by their size.
const requestTimeout = 2 * time.Minute

// maxMetadataBytes bounds the metadata.json a reader takes: per-round metrics of a long training
// are large, but not this large.
const maxMetadataBytes = 64 << 20

// VersionURI is a model version's folder under the store base (s3://<bucket>[/<prefix>]):
// s3://<bucket>/<prefix>/<model>/<version>/. Every element of the prefix follows the claim
// layout's name rules, so a URI never holds "..", "//" or a character a shell or log line would
// change.
func VersionURI(base, model, version string) (string, error) {
	if err := errors.Join(claim.CheckSegment("model_name", model), claim.CheckSegment("model_version", version)); err != nil {
		return "", err
	}
	loc, err := ParseBase(base)
	if err != nil {
		return "", err
	}
	return Scheme + loc.Bucket + "/" + loc.Key + model + "/" + version + "/", nil
}

// ParseBase checks a model store base s3://<bucket>[/<prefix>[/]] and returns it with the key
// ending in "/" (or empty).
func ParseBase(base string) (objectstore.Location, error) {
	if !strings.HasPrefix(base, Scheme) {
		return objectstore.Location{}, fmt.Errorf("model store %q: want s3://<bucket>/<prefix> (KServe's storage initializers read s3://; a minio:// store is s3:// with object_store_endpoint set)", base)
	}
	loc, err := objectstore.ParseURI(base)
	if err != nil {
		return loc, err
	}
	if err := checkBucket(loc.Bucket); err != nil {
		return loc, fmt.Errorf("model store %q: %w", base, err)
	}
	key := strings.TrimSuffix(loc.Key, "/")
	if key != "" {
		if err := claim.CheckPath(key); err != nil {
			return loc, fmt.Errorf("model store %q: prefix: %w", base, err)
		}
		key += "/"
	}
	loc.Key = key
	return loc, nil
}

// checkBucket applies S3's bucket naming rules (3 to 63 lower case letters, digits, '.' and '-',
// starting and ending with a letter or digit).
func checkBucket(b string) error {
	ok := len(b) >= 3 && len(b) <= 63
	for i, r := range b {
		alnum := r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		if !alnum && (r != '.' && r != '-' || i == 0 || i == len(b)-1) {
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("bucket %q: want 3 to 63 lower case letters, digits, '.' or '-', starting and ending with a letter or digit", b)
	}
	return nil
}

// Folder is one model version's folder in an object store.
type Folder struct {
	Client *objectstore.Client
	// Bucket and Prefix locate it; Prefix ends in "/".
	Bucket, Prefix string
}

// Open returns the folder of a version URI (s3://<bucket>/<key>/, as VersionURI makes).
func Open(uri string, cfg objectstore.Config, appInfo string) (*Folder, error) {
	loc, err := ParseBase(uri)
	if err != nil {
		return nil, err
	}
	if loc.Key == "" {
		return nil, fmt.Errorf("model folder %q: a whole bucket is no model folder: want s3://<bucket>/<prefix>/<model>/<version>/", uri)
	}
	cl, err := objectstore.New(cfg, "s3", appInfo)
	if err != nil {
		return nil, err
	}
	return &Folder{Client: cl, Bucket: loc.Bucket, Prefix: loc.Key}, nil
}

// URI is the folder as s3://<bucket>/<prefix>/.
func (f *Folder) URI() string { return Scheme + f.Bucket + "/" + f.Prefix }

func (f *Folder) explain(what string, err error) error { return f.Client.Explain(f.URI(), what, err) }

// IncompleteError is a folder without metadata.json: no published model version (nothing was
// written there, or an upload stopped before its last object).
type IncompleteError struct {
	URI string
	// Objects are the objects found under the prefix (at most a few), empty when there are none.
	Objects []string
}

func (e *IncompleteError) Error() string {
	if len(e.Objects) == 0 {
		return fmt.Sprintf("%s holds no model version: no %s under it (check model_uri, or that the training run published it)", e.URI, modeldir.MetadataFile)
	}
	return fmt.Sprintf("%s is no complete model version: it holds %s but no %s (an upload that stopped before its last object); nothing there is served", e.URI, strings.Join(e.Objects, ", "), modeldir.MetadataFile)
}

// ReadMetadata reads the folder's metadata.json: an *IncompleteError when there is none.
func (f *Folder) ReadMetadata(ctx context.Context) (*modeldir.Metadata, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	obj, err := f.Client.GetObject(ctx, f.Bucket, f.Prefix+modeldir.MetadataFile, minio.GetObjectOptions{})
	if err != nil {
		return nil, f.explain("read "+modeldir.MetadataFile, err)
	}
	defer obj.Close()
	b, err := io.ReadAll(io.LimitReader(obj, maxMetadataBytes+1))
	if objectstore.IsNotFound(err) {
		return nil, f.incomplete(ctx)
	}
	if err != nil {
		return nil, f.explain("read "+modeldir.MetadataFile, err)
	}
	if len(b) > maxMetadataBytes {
		return nil, fmt.Errorf("%s%s is larger than %d bytes: not a model's metadata", f.URI(), modeldir.MetadataFile, maxMetadataBytes)
	}
	var md modeldir.Metadata
	if err := json.Unmarshal(b, &md); err != nil {
		return nil, fmt.Errorf("read %s%s: %w", f.URI(), modeldir.MetadataFile, err)
	}
	return &md, nil
}

// incomplete lists what the prefix holds for an *IncompleteError.
func (f *Folder) incomplete(ctx context.Context) error {
	e := &IncompleteError{URI: f.URI()}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for obj := range f.Client.ListObjects(lctx, f.Bucket, minio.ListObjectsOptions{Prefix: f.Prefix, Recursive: true}) {
		if obj.Err != nil {
			return f.explain("list", obj.Err)
		}
		if len(e.Objects) == 5 {
			e.Objects = append(e.Objects, "...")
			break
		}
		e.Objects = append(e.Objects, strings.TrimPrefix(obj.Key, f.Prefix))
	}
	return e
}

// CheckNew is modeldir.CheckNew for the folder: nil when no version is published there, or when
// the one there names producer (non-empty) as its writer (own is then true); a
// *modeldir.ExistsError otherwise.
func (f *Folder) CheckNew(ctx context.Context, producer string) (own bool, err error) {
	md, err := f.ReadMetadata(ctx)
	var inc *IncompleteError
	if errors.As(err, &inc) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if producer != "" && md.Producer == producer {
		return true, nil
	}
	return false, &modeldir.ExistsError{Dir: f.URI(), Producer: md.Producer}
}

// Publish writes the model (as modelFile, e.g. "model.json") and md, whose ModelFile and
// ModelSHA256 it sets, into the folder: first the model object, then metadata.json, each sent
// with its MD5 (the store refuses bytes that arrive changed) and its SHA-256 as user metadata,
// and written only where
// no object of its name exists (If-None-Match: *), so that of publishers racing for a version one
// wins and the others get a *modeldir.ExistsError. A model object left by an interrupted attempt
// of the same producer is replaced; one of another producer is refused, naming it. With replace
// (overwrite) the version's metadata.json is deleted first, so readers see no version rather than
// new bytes under old metadata while it is rewritten.
func (f *Folder) Publish(ctx context.Context, modelFile string, model []byte, md *modeldir.Metadata, replace bool) error {
	if modelFile == "" || strings.Contains(modelFile, "/") || modelFile == modeldir.MetadataFile {
		return fmt.Errorf("publish model folder %s: model file name %q: want a plain name such as model.json", f.URI(), modelFile)
	}
	sum := sha256.Sum256(model)
	md.ModelFile, md.ModelSHA256 = modelFile, hex.EncodeToString(sum[:])
	js, err := json.MarshalIndent(md, "", "  ")
	if err != nil {
		return fmt.Errorf("publish model folder %s: %w", f.URI(), err)
	}
	js = append(js, '\n')
	if replace {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		err := f.Client.RemoveObject(ctx, f.Bucket, f.Prefix+modeldir.MetadataFile, minio.RemoveObjectOptions{})
		cancel()
		if err != nil && !objectstore.IsNotFound(err) {
			return f.explain("remove "+modeldir.MetadataFile+" to overwrite the version", err)
		}
	}
	if err := f.put(ctx, modelFile, model, md.Producer, !replace); objectstore.IsPreconditionFailed(err) {
		// A model object without metadata: an interrupted attempt's, or a racing publisher's.
		if err := f.claimModelObject(ctx, modelFile, md.Producer); err != nil {
			return err
		}
		if err := f.put(ctx, modelFile, model, md.Producer, false); err != nil {
			return f.explain("write "+modelFile, err)
		}
	} else if err != nil {
		return f.explain("write "+modelFile, err)
	}
	if err := f.put(ctx, modeldir.MetadataFile, js, md.Producer, !replace); objectstore.IsPreconditionFailed(err) {
		e := &modeldir.ExistsError{Dir: f.URI()}
		if other, rerr := f.ReadMetadata(ctx); rerr == nil {
			e.Producer = other.Producer
		}
		return e
	} else if err != nil {
		return f.explain("write "+modeldir.MetadataFile, err)
	}
	return nil
}

// claimModelObject decides whether the model object found where a new one was to be written may
// be replaced: only when the folder has no metadata.json and the object's producer is this one.
func (f *Folder) claimModelObject(ctx context.Context, modelFile, producer string) error {
	if md, err := f.ReadMetadata(ctx); err == nil {
		return &modeldir.ExistsError{Dir: f.URI(), Producer: md.Producer}
	} else if inc := (*IncompleteError)(nil); !errors.As(err, &inc) {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	info, err := f.Client.StatObject(sctx, f.Bucket, f.Prefix+modelFile, minio.StatObjectOptions{})
	if err != nil {
		return f.explain("stat "+modelFile, err)
	}
	if owner := info.UserMetadata[ProducerMeta]; producer == "" || owner != producer {
		if owner == "" {
			owner = "an unknown writer"
		}
		return fmt.Errorf("publish model folder %s: %s was written by %s and the version has no %s: another job is publishing this version, or its upload stopped; train into another version (model_version), or remove %s%s if no job writes it",
			f.URI(), modelFile, owner, modeldir.MetadataFile, f.URI(), modelFile)
	}
	return nil
}

// put writes one object with its SHA-256 and the producer as user metadata; ifNew writes it only where
// none exists.
func (f *Folder) put(ctx context.Context, name string, data []byte, producer string, ifNew bool) error {
	opts := minio.PutObjectOptions{
		ContentType: "application/octet-stream",
		// Content-MD5 makes every S3 store refuse bytes that arrive changed (SHA-256 checksums
		// need trailing headers, which not every S3-compatible store takes).
		SendContentMd5: true,
	}
	if strings.HasSuffix(name, ".json") {
		opts.ContentType = "application/json"
	}
	sum := sha256.Sum256(data)
	opts.UserMetadata = map[string]string{SHA256Meta: hex.EncodeToString(sum[:])}
	if producer != "" {
		opts.UserMetadata[ProducerMeta] = producer
	}
	if ifNew {
		opts.SetMatchETagExcept("*")
	}
	_, err := f.Client.PutObject(ctx, f.Bucket, f.Prefix+name, bytes.NewReader(data), int64(len(data)), opts)
	return err
}

// DigestError is a model object whose bytes are not the ones its metadata.json records (found by
// Download, and by the storage initializer after its download).
type DigestError struct {
	Object    string
	Want, Got string
}

func (e *DigestError) Error() string {
	return fmt.Sprintf("%s: sha256 %s, but metadata.json records %s: the object changed after it was published (or is corrupt); the model is not served", e.Object, e.Got, e.Want)
}

// Download copies the published version into dir (a model folder, published whole with
// modeldir.PublishFolder, replacing an earlier copy) once the model file's bytes match the
// sha256 of metadata.json; a model file larger than maxBytes is refused before it is read. A
// dir that already holds this version (the same sha256) is kept as it is.
func (f *Folder) Download(ctx context.Context, dir string, maxBytes int64) (*modeldir.Metadata, error) {
	md, err := f.ReadMetadata(ctx)
	if err != nil {
		return nil, err
	}
	if err := md.CheckModelFile(); err != nil {
		return nil, fmt.Errorf("%s%w", f.URI(), err)
	}
	if have, err := modeldir.ReadMetadata(dir); err == nil && have.ModelSHA256 == md.ModelSHA256 {
		return md, nil
	}
	obj := f.URI() + md.ModelFile
	sctx, cancel := context.WithTimeout(ctx, requestTimeout)
	info, err := f.Client.StatObject(sctx, f.Bucket, f.Prefix+md.ModelFile, minio.StatObjectOptions{})
	cancel()
	if err != nil {
		return nil, f.explain("stat "+md.ModelFile, err)
	}
	if info.Size > maxBytes {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d a model may have here", obj, info.Size, maxBytes)
	}
	body, err := f.Client.GetObject(ctx, f.Bucket, f.Prefix+md.ModelFile, minio.GetObjectOptions{})
	if err != nil {
		return nil, f.explain("read "+md.ModelFile, err)
	}
	defer body.Close()
	model, err := io.ReadAll(io.LimitReader(body, maxBytes+1))
	if err != nil {
		return nil, f.explain("read "+md.ModelFile, err)
	}
	sum := sha256.Sum256(model)
	if got := hex.EncodeToString(sum[:]); got != md.ModelSHA256 {
		return nil, &DigestError{Object: obj, Want: md.ModelSHA256, Got: got}
	}
	js, err := json.MarshalIndent(md, "", "  ")
	if err != nil {
		return nil, err
	}
	files := []modeldir.File{{Name: md.ModelFile, Data: model}, {Name: modeldir.MetadataFile, Data: append(js, '\n')}}
	if err := modeldir.PublishFolder(dir, modeldir.ModelFolder, files); err != nil {
		return nil, fmt.Errorf("copy %s to %s: %w", f.URI(), dir, err)
	}
	return md, nil
}
