package cluster

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"time"
)

// PauseImage is the sandbox image of the real nodes, named in containerd's sandbox_image: built
// from test/cluster/pause at each start, never pulled.
const PauseImage = "localhost/gangboost-pause:1"

// buildPauseImage builds the pause program and writes it as PauseImage's archive in dir.
func buildPauseImage(ctx context.Context, repo, dir string) (string, error) {
	return goProgramImage(ctx, repo, dir, "pause", PauseImage, "./test/cluster/pause")
}

// goProgramImage builds the Go main package pkg (relative to the checkout repo) as a static binary
// (CGO off) and writes it to dir/<name>.tar as a single-layer FROM-scratch OCI archive named
// image, the binary at /<name> its entrypoint; ctr imports it as it imports buildah's archives.
func goProgramImage(ctx context.Context, repo, dir, name, image, pkg string) (string, error) {
	bin := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, pkg)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s (go build %s in %s): %w\n%s", name, pkg, repo, err, out)
	}
	prog, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	archive, err := ociArchive(image, "/"+name, map[string][]byte{name: prog})
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+".tar")
	return path, os.WriteFile(path, archive, 0o644)
}

// ImportGoProgram builds the Go main package pkg (a ./path in the checkout) and imports it into
// the real node as image: a FROM-scratch image holding the static binary as its entrypoint, for a
// test's own small program in a pod.
func (c *Cluster) ImportGoProgram(ctx context.Context, image, pkg string) error {
	if c.real == nil {
		return errors.New("import a Go program: the control plane has no real node (Options.RealNode)")
	}
	dir, err := os.MkdirTemp(c.real.dir, "image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	archive, err := goProgramImage(ctx, c.opts.RepoRoot, dir, filepath.Base(pkg), image, pkg)
	if err != nil {
		return err
	}
	return c.real.cd.importImage(ctx, archive)
}

// ImportBinary imports the static binary bin into the real node as image: a FROM-scratch image
// holding it at /<its name> as its entrypoint (a tool of the test plane, such as the model
// registry's storage initializer, in a pod).
func (c *Cluster) ImportBinary(ctx context.Context, image, bin string) error {
	if c.real == nil {
		return errors.New("import a binary: the control plane has no real node (Options.RealNode)")
	}
	prog, err := os.ReadFile(bin)
	if err != nil {
		return err
	}
	name := filepath.Base(bin)
	archive, err := ociArchive(image, "/"+name, map[string][]byte{name: prog})
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp(c.real.dir, "image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, name+".tar")
	if err := os.WriteFile(path, archive, 0o644); err != nil {
		return err
	}
	return c.real.cd.importImage(ctx, path)
}

// ociArchive is an OCI image layout in a tar (what `ctr images import` reads): one uncompressed
// layer holding files (executable, at the root), a config whose entrypoint is entrypoint, and an
// index naming the image name.
func ociArchive(name, entrypoint string, files map[string][]byte) ([]byte, error) {
	var layer bytes.Buffer
	lw := tar.NewWriter(&layer)
	// A fixed time keeps the layer's digest the same from build to build of the same program.
	mtime := time.Unix(0, 0)
	for _, f := range slices.Sorted(maps.Keys(files)) {
		if err := lw.WriteHeader(&tar.Header{Name: f, Mode: 0o755, Size: int64(len(files[f])), ModTime: mtime, Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := lw.Write(files[f]); err != nil {
			return nil, err
		}
	}
	if err := lw.Close(); err != nil {
		return nil, err
	}
	type descriptor struct {
		MediaType   string            `json:"mediaType"`
		Digest      string            `json:"digest"`
		Size        int               `json:"size"`
		Annotations map[string]string `json:"annotations,omitempty"`
	}
	blobs := map[string][]byte{}
	describe := func(mediaType string, b []byte) descriptor {
		sum := sha256.Sum256(b)
		d := hex.EncodeToString(sum[:])
		blobs[d] = b
		return descriptor{MediaType: mediaType, Digest: "sha256:" + d, Size: len(b)}
	}
	layerDesc := describe("application/vnd.oci.image.layer.v1.tar", layer.Bytes())
	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"config":       map[string]any{"Entrypoint": []string{entrypoint}},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{layerDesc.Digest}},
	})
	if err != nil {
		return nil, err
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        describe("application/vnd.oci.image.config.v1+json", config),
		"layers":        []descriptor{layerDesc},
	})
	if err != nil {
		return nil, err
	}
	mdesc := describe("application/vnd.oci.image.manifest.v1+json", manifest)
	mdesc.Annotations = map[string]string{"io.containerd.image.name": name, "org.opencontainers.image.ref.name": name}
	index, err := json.Marshal(map[string]any{"schemaVersion": 2, "manifests": []descriptor{mdesc}})
	if err != nil {
		return nil, err
	}

	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	add := func(name string, b []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), ModTime: mtime, Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(b)
		return err
	}
	if err := add("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return nil, err
	}
	if err := add("index.json", index); err != nil {
		return nil, err
	}
	for _, d := range slices.Sorted(maps.Keys(blobs)) {
		if err := add("blobs/sha256/"+d, blobs[d]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
