package images

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// archMachine is the ELF machine of each architecture the images are built for, and its
// Debian multiarch triplet (library folders, cross compiler prefix).
var archMachine = map[string]struct {
	machine elf.Machine
	triplet string
}{
	"amd64": {elf.EM_X86_64, "x86_64-linux-gnu"},
	"arm64": {elf.EM_AARCH64, "aarch64-linux-gnu"},
}

// otherArch is the one of amd64 and arm64 that is not the host's ("" on another host).
func otherArch() string {
	switch runtime.GOARCH {
	case "amd64":
		return "arm64"
	case "arm64":
		return "amd64"
	}
	return ""
}

// crossToolchainMissing says what build-images.sh lacks to build for arch, "" when nothing.
func crossToolchainMissing(arch string) string {
	cc := archMachine[arch].triplet + "-gcc"
	if _, err := exec.LookPath(cc); err != nil {
		return cc + " is not installed"
	}
	return ""
}

func archive(name, arch string) string {
	return filepath.Join(store, "dist", name+"-"+version+"-"+arch+".tar")
}

// ociImage is an OCI archive's one image: its config and its files (layers applied in order).
type ociImage struct {
	config struct {
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
	}
	files map[string]*tar.Header // by path without a leading /
	data  map[string][]byte      // regular files' contents, of those wanted
}

// readOCIArchive reads the image of an OCI archive as build-images.sh writes it (one manifest),
// keeping the contents of the files want says.
func readOCIArchive(t *testing.T, file string, want func(name string) bool) *ociImage {
	t.Helper()
	blobs := map[string][]byte{}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			blobs[strings.TrimPrefix(h.Name, "./")] = b
		}
	}
	blob := func(digest string) []byte {
		b, ok := blobs["blobs/"+strings.Replace(digest, ":", "/", 1)]
		if !ok {
			t.Fatalf("%s: no blob %s", file, digest)
		}
		return b
	}
	type descriptor struct{ MediaType, Digest string }
	var index struct{ Manifests []descriptor }
	if err := json.Unmarshal(blobs["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("%s: index.json %s (%v): want one manifest", file, blobs["index.json"], err)
	}
	var manifest struct {
		Config descriptor
		Layers []descriptor
	}
	if err := json.Unmarshal(blob(index.Manifests[0].Digest), &manifest); err != nil {
		t.Fatalf("%s: manifest: %v", file, err)
	}
	img := &ociImage{files: map[string]*tar.Header{}, data: map[string][]byte{}}
	if err := json.Unmarshal(blob(manifest.Config.Digest), &img.config); err != nil {
		t.Fatalf("%s: config: %v", file, err)
	}
	for _, l := range manifest.Layers {
		var r io.Reader = bytes.NewReader(blob(l.Digest))
		if strings.HasSuffix(l.MediaType, "+gzip") {
			if r, err = gzip.NewReader(r); err != nil {
				t.Fatalf("%s: layer %s: %v", file, l.Digest, err)
			}
		}
		lr := tar.NewReader(r)
		for {
			h, err := lr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: layer %s: %v", file, l.Digest, err)
			}
			name := strings.TrimSuffix(strings.TrimPrefix(path.Clean("/"+h.Name), "/"), "/")
			img.files[name] = h
			if h.Typeflag == tar.TypeReg && want(name) {
				if img.data[name], err = io.ReadAll(lr); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return img
}

// resolve follows symbolic links (and links in the folders above) within the image, as the
// dynamic loader would, to a regular file.
func (img *ociImage) resolve(p string) (string, bool) {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	for hops := 0; hops < 40; hops++ {
		parts := strings.Split(p, "/")
		moved := false
		for i := range parts {
			prefix := strings.Join(parts[:i+1], "/")
			h, ok := img.files[prefix]
			if !ok {
				return "", false
			}
			if h.Typeflag == tar.TypeSymlink {
				target := h.Linkname
				if !path.IsAbs(target) {
					target = path.Join(path.Dir("/"+prefix), target)
				}
				p = strings.TrimPrefix(path.Clean("/"+target+"/"+strings.Join(parts[i+1:], "/")), "/")
				moved = true
				break
			}
		}
		if !moved {
			h := img.files[p]
			return p, h != nil && h.Typeflag == tar.TypeReg
		}
	}
	return "", false
}

// Each architecture's archive is an image for that architecture: its config says so, and every
// program in it, and for gangboost-train its loader and each library it needs (and those need),
// found in the image as the dynamic loader would look for them, is an ELF file of that
// architecture's machine. The other architecture's programs cannot run here; this is what
// running them would first depend on.
func TestArchivesPerArchitecture(t *testing.T) {
	requireImages(t)
	t.Logf("built for %v", arches)
	if len(arches) < 2 {
		t.Logf("only the host's architecture was built: %s", crossToolchainMissing(otherArch()))
	}
	for _, arch := range arches {
		m := archMachine[arch]
		libDirs := []string{"lib/" + m.triplet, "usr/lib/" + m.triplet}
		for _, c := range []struct {
			image    string
			programs []string
		}{
			{"gangboost-runtime", []string{"usr/local/bin/gangboost-runtime"}},
			{"gangboost", []string{"usr/local/bin/gangboost-train", "usr/local/bin/gangboost-components"}},
		} {
			t.Run(c.image+"/"+arch, func(t *testing.T) {
				img := readOCIArchive(t, archive(c.image, arch), func(name string) bool {
					return strings.HasPrefix(name, "usr/local/bin/") || strings.HasPrefix(name, "lib/") || strings.HasPrefix(name, "usr/lib/")
				})
				if img.config.Architecture != arch || img.config.OS != "linux" {
					t.Errorf("config: %s/%s, want linux/%s", img.config.OS, img.config.Architecture, arch)
				}
				machine := func(p string) (*elf.File, error) {
					real, ok := img.resolve(p)
					if !ok {
						return nil, fmt.Errorf("%s is not in the image", p)
					}
					f, err := elf.NewFile(bytes.NewReader(img.data[real]))
					if err != nil {
						return nil, fmt.Errorf("%s (%s): %w", p, real, err)
					}
					if f.Machine != m.machine {
						return nil, fmt.Errorf("%s is for %s, want %s", p, f.Machine, m.machine)
					}
					return f, nil
				}
				// Each program, then every library it needs, and theirs, as the loader finds them.
				for _, p := range c.programs {
					queue, seen := []string{p}, map[string]bool{p: true}
					for len(queue) > 0 {
						q := queue[0]
						queue = queue[1:]
						f, err := machine(q)
						if err != nil {
							t.Error(err)
							continue
						}
						for _, prog := range f.Progs {
							if prog.Type != elf.PT_INTERP {
								continue
							}
							interp, _ := io.ReadAll(prog.Open())
							if _, err := machine(strings.TrimRight(string(interp), "\x00")); err != nil {
								t.Errorf("%s's loader: %v", q, err)
							}
						}
						libs, _ := f.ImportedLibraries()
						for _, lib := range libs {
							var errs []string
							found := ""
							for _, dir := range libDirs {
								if _, err := machine(dir + "/" + lib); err != nil {
									errs = append(errs, err.Error())
									continue
								}
								found = dir + "/" + lib
								break
							}
							if found == "" {
								t.Errorf("%s (for %s) needs %s: %s", q, p, lib, strings.Join(errs, "; "))
							} else if !seen[found] {
								seen[found] = true
								queue = append(queue, found)
							}
						}
					}
					t.Logf("%s: %s, with %d libraries", p, m.machine, len(seen)-1)
				}
				if c.image == "gangboost" {
					if _, err := machine("usr/lib/" + m.triplet + "/libxgboost.so.0"); err != nil {
						t.Error(err)
					}
				}
			})
		}
	}
}

// make push pushes each image as one name for every architecture built: the manifest list
// build-images.sh leaves lists each architecture's image, and scripts/push-images.sh sends it as
// an OCI image index (here into an OCI layout instead of a registry).
func TestPushSendsEveryArchitecture(t *testing.T) {
	requireImages(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dest := t.TempDir()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "push-images.sh"))
	cmd.Env = append(os.Environ(), "BUILDAH_STORAGE="+strings.Join(storageFlags(), " "), "PUSH_TO=oci:"+dest,
		"VERSION="+version, "REGISTRY="+registry)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("push-images.sh: %v\n%s", err, out)
	}
	t.Logf("push-images.sh:\n%s", out)
	for _, name := range []string{"gangboost-runtime", "gangboost"} {
		layout := filepath.Join(dest, name)
		read := func(p string) []byte {
			b, err := os.ReadFile(filepath.Join(layout, p))
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		var top struct {
			Manifests []struct {
				MediaType, Digest string
				Annotations       map[string]string
			}
		}
		if err := json.Unmarshal(read("index.json"), &top); err != nil || len(top.Manifests) != 1 ||
			top.Manifests[0].MediaType != "application/vnd.oci.image.index.v1+json" || top.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != version {
			t.Fatalf("%s: index.json %+v (%v), want one OCI image index named %s", name, top, err, version)
		}
		var idx struct {
			Manifests []struct {
				Digest   string
				Platform struct{ OS, Architecture string }
			}
		}
		if err := json.Unmarshal(read(filepath.Join("blobs", strings.Replace(top.Manifests[0].Digest, ":", "/", 1))), &idx); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range idx.Manifests {
			got = append(got, m.Platform.OS+"/"+m.Platform.Architecture)
			var manifest struct{ Config struct{ Digest string } }
			if err := json.Unmarshal(read(filepath.Join("blobs", strings.Replace(m.Digest, ":", "/", 1))), &manifest); err != nil {
				t.Fatal(err)
			}
			var config struct{ Architecture string }
			if err := json.Unmarshal(read(filepath.Join("blobs", strings.Replace(manifest.Config.Digest, ":", "/", 1))), &config); err != nil {
				t.Fatal(err)
			}
			if config.Architecture != m.Platform.Architecture {
				t.Errorf("%s: the index's %s entry is an image for %s", name, m.Platform.Architecture, config.Architecture)
			}
		}
		var want []string
		for _, arch := range arches {
			want = append(want, "linux/"+arch)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: pushed index lists %v, want %v", name, got, want)
		}
	}
}
