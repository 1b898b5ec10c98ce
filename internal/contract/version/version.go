// Package version is gangboost's version and where its images live, in Go: the binaries report
// it and the component specs name their images from it. It equals the VERSION file, which the
// Makefile and the image builds read (test/images checks they agree).
package version

// Version is the release every binary reports and every image is tagged with.
const Version = "0.1.0"

// Registry is where gangboost's images are published.
const Registry = "ghcr.io/gangboost"

// Image is the reference of one of gangboost's images ("gangboost", "gangboost-runtime").
func Image(name string) string { return Registry + "/" + name + ":" + Version }
