// Package version is gangboost's version and where its images live, in Go: the binaries report
// it and the component specs name their images from it. It equals the VERSION file, which the
// Makefile and the image builds read (test/images checks they agree).
package version

import "strings"

// Version is the release every binary reports and every image is tagged with.
const Version = "0.1.0"

// DefaultRegistry is where the committed component specs, pipeline package and manifests say
// gangboost's images are.
const DefaultRegistry = "ghcr.io/gangboost"

// Registry is where this binary's images are: DefaultRegistry unless the build set it with
// `make build REGISTRY=...` (-ldflags -X .../internal/contract/version.Registry=...). A variable,
// not a constant, because -X can set only a string variable; launch-xgboostjob's default trainer
// image follows it.
var Registry = DefaultRegistry

// Image is the reference of one of gangboost's images ("gangboost", "gangboost-runtime") in
// Registry.
func Image(name string) string { return ImageIn(Registry, name) }

// ImageIn is the reference of one of gangboost's images in registry.
func ImageIn(registry, name string) string {
	return strings.TrimSuffix(registry, "/") + "/" + name + ":" + Version
}

// Rehome moves every reference to one of gangboost's images in DefaultRegistry within text
// (a component spec, a package, a manifest) to registry; other text is left as it is.
func Rehome(text, registry string) string {
	registry = strings.TrimSuffix(registry, "/")
	if registry == DefaultRegistry {
		return text
	}
	return strings.ReplaceAll(text, DefaultRegistry+"/gangboost", registry+"/gangboost")
}
