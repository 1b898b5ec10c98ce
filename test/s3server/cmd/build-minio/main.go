// Command build-minio builds the object storage tests' MinIO server into the gangboost cache
// (make s3-server; make test runs it first, so the tests do not wait for the build).
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/gangboost/gangboost/test/s3server"
)

func main() {
	bin, err := s3server.Binary(context.Background(), os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "build-minio:", err)
		os.Exit(1)
	}
	fmt.Println(bin)
}
