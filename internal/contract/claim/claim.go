// Package claim is the layout of the PersistentVolumeClaim the pipeline shares: which claim names
// and which data set and model names are accepted, where data sets, models and training
// checkpoints live on it (datasets/<name>, models/<model>/<version>,
// checkpoints/<model>/<version>, and the local serving records serving/<service>.json), the pvc://<claim>/<path> URIs KServe and the
// components exchange, and how a claim-relative path becomes a path under the folder where a step
// sees the claim without ever leaving it.
//
// Every rule is checked before anything is written: a name that would make a published folder
// land somewhere else (".." swaps out models/ whole) or split a log line (a newline) is refused
// with the rule it breaks.
package claim

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Top-level folders of the claim.
const (
	DatasetsDir = "datasets"
	ModelsDir   = "models"
	// CheckpointsDir holds the trainer's checkpoints, one folder per model version, beside
	// models/ rather than in the model folder: publishing replaces a model folder whole, and a
	// half-trained model must never be served.
	CheckpointsDir = "checkpoints"
	// ServingDir holds, for the local serving backend (where no InferenceService records it),
	// which model each service name serves and the one before it: serving/<service>.json.
	ServingDir = "serving"
)

// Scheme is the URI scheme of a path on a claim, as KServe's storageUri takes it.
const Scheme = "pvc://"

// MaxSegmentLength bounds a data set's or model's name or version: a DNS label's 63, so a name
// can also name a Kubernetes object (an InferenceService, a label value).
const MaxSegmentLength = 63

// segmentRE is a name or version: ASCII letters, digits, '.', '_' and '-', starting with a letter
// or digit. That is what KFP and KServe users already write (iris, iris-gang, v1, 2024.06.01,
// rc_2), it can never be "." or "..", and it prints the same in a log line, a URI and a shell.
var segmentRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// CheckName checks a PersistentVolumeClaim's name: a Kubernetes DNS-1123 subdomain (lower case
// letters, digits, '-' and '.', at most 253 characters), which is what the API server accepts.
func CheckName(name string) error {
	if name == "" {
		return errors.New("claim name (pvc_name) is empty: name the PersistentVolumeClaim holding data and models, e.g. gangboost-models")
	}
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		return fmt.Errorf("claim name (pvc_name) %q is not a PersistentVolumeClaim name: %s", name, strings.Join(msgs, "; "))
	}
	return nil
}

// CheckSegment checks one name of the layout (what says which: "model_name", "model_version",
// "name"): 1 to 63 ASCII letters, digits, '.', '_' or '-', starting with a letter or digit; so
// never "", ".", ".." or anything holding a '/'.
func CheckSegment(what, s string) error {
	if len(s) > MaxSegmentLength || !segmentRE.MatchString(s) {
		return fmt.Errorf("%s %q: want 1 to %d ASCII letters, digits, '.', '_' or '-', starting with a letter or digit (e.g. iris, v1, 2024.06.01)",
			what, s, MaxSegmentLength)
	}
	return nil
}

// DatasetPath is a data set's folder on the claim: datasets/<name>.
func DatasetPath(name string) (string, error) {
	if err := CheckSegment("data set name", name); err != nil {
		return "", err
	}
	return DatasetsDir + "/" + name, nil
}

// ModelPath is a model version's folder on the claim: models/<model>/<version>.
func ModelPath(model, version string) (string, error) {
	errs := errors.Join(CheckSegment("model_name", model), CheckSegment("model_version", version))
	if errs != nil {
		return "", errs
	}
	return ModelsDir + "/" + model + "/" + version, nil
}

// CheckpointPath is the folder of a model version's training checkpoints on the claim:
// checkpoints/<model>/<version>. A restarted gang finds the checkpoints of the run it continues
// there, since it trains the same model version.
func CheckpointPath(model, version string) (string, error) {
	errs := errors.Join(CheckSegment("model_name", model), CheckSegment("model_version", version))
	if errs != nil {
		return "", errs
	}
	return CheckpointsDir + "/" + model + "/" + version, nil
}

// ServingRecordPath is the local serving record of a service on the claim:
// serving/<service>.json.
func ServingRecordPath(service string) (string, error) {
	if err := CheckSegment("service name", service); err != nil {
		return "", err
	}
	return ServingDir + "/" + service + ".json", nil
}

// CheckPath checks a claim-relative path as URIs carry it: slash-separated, clean (no "//",
// "./", "../" or trailing '/'), relative, and every element a name CheckSegment accepts.
func CheckPath(p string) error {
	if p == "" {
		return errors.New("the path on the claim is empty")
	}
	if p == ".." || strings.HasPrefix(p, "../") {
		return fmt.Errorf("the path %q on the claim must stay inside the claim", p)
	}
	if path.Clean(p) != p || path.IsAbs(p) {
		return fmt.Errorf("the path %q on the claim must be clean and relative (no leading '/', no //, ./, ../ or trailing /)", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if err := CheckSegment("path element", seg); err != nil {
			return fmt.Errorf("the path %q on the claim: %w", p, err)
		}
	}
	return nil
}

// URI is a path on a claim: pvc://<Claim>/<Path>.
type URI struct {
	Claim string
	Path  string
}

// NewURI is the URI of path p on the claim named claim, both checked.
func NewURI(claim, p string) (URI, error) {
	if err := errors.Join(CheckName(claim), CheckPath(p)); err != nil {
		return URI{}, err
	}
	return URI{Claim: claim, Path: p}, nil
}

// ModelURI is the URI of a model version's folder: pvc://<claim>/models/<model>/<version>.
func ModelURI(claim, model, version string) (URI, error) {
	p, err := ModelPath(model, version)
	if err != nil {
		return URI{}, err
	}
	return NewURI(claim, p)
}

func (u URI) String() string { return Scheme + u.Claim + "/" + u.Path }

// ParseURI reads pvc://<claim>/<path>, refusing a claim name the API server would refuse and a
// path CheckPath refuses: KServe mounts the path as the volume's subPath, and a path that is not
// clean could name a folder outside the model's.
func ParseURI(s string) (URI, error) {
	rest, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		return URI{}, fmt.Errorf("%q: want pvc://<claim>/<path>", s)
	}
	c, p, ok := strings.Cut(rest, "/")
	if !ok || c == "" || p == "" {
		return URI{}, fmt.Errorf("%q: want pvc://<claim>/<path>, with both a claim and a path", s)
	}
	u, err := NewURI(c, p)
	if err != nil {
		return URI{}, fmt.Errorf("%q: %w", s, err)
	}
	return u, nil
}

// Join is the claim-relative path rel under root, the folder where this process sees the claim.
// rel may be written with "." and redundant slashes, but after cleaning it must stay inside the
// claim: "..", "../x", "a/../../x" and absolute paths are refused, as is an empty rel (the claim
// itself is not a file or folder a step reads or writes by name). Symbolic links on the claim are
// not followed: the result is inside root as a name.
func Join(root, rel string) (string, error) {
	if root == "" {
		return "", errors.New("no claim folder given (pvc_mount_path)")
	}
	if rel == "" {
		return "", errors.New("the path on the claim is empty")
	}
	if path.IsAbs(rel) || filepath.IsAbs(rel) {
		return "", fmt.Errorf("the path %q on the claim must be relative to the claim", rel)
	}
	clean := path.Clean(filepath.ToSlash(rel))
	if clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("the path %q on the claim must stay inside the claim (it resolves to %q)", rel, clean)
	}
	return filepath.Join(root, filepath.FromSlash(clean)), nil
}
