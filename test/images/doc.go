// Package images tests gangboost's container images as they are built without a Docker daemon
// (scripts/build-images.sh: buildah from scratch, a Debian-package root for the trainer) and run
// with podman as a cluster would run them; and that every image reference in the repository
// carries the one version in VERSION.
package images
