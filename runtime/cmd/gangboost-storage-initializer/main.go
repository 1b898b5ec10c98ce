// gangboost-storage-initializer is the init container KServe runs for s3:// storage URIs when
// gangboost's ClusterStorageContainer is installed: `gangboost-storage-initializer <storageUri>
// <modelDir>`, as KServe calls every storage initializer. It exits non-zero, naming the object,
// when the model cannot be downloaded or does not match its metadata.json.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/gangboost/gangboost/runtime/storageinit"
)

func main() {
	fs := flag.NewFlagSet("gangboost-storage-initializer", flag.ContinueOnError)
	lim := storageinit.DefaultLimits
	fs.Int64Var(&lim.MaxBytes, "max-bytes", lim.MaxBytes, "refuse a model folder larger than this many bytes")
	fs.IntVar(&lim.MaxObjects, "max-objects", lim.MaxObjects, "refuse a model folder of more objects than this")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: gangboost-storage-initializer [flags] <storageUri> <modelDir>")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil || fs.NArg() != 2 {
		fs.Usage()
		os.Exit(2)
	}
	// SIGTERM keeps its default action: the process ends at once, mid-download or not (the
	// pod's emptyDir goes with it).
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if _, err := storageinit.Download(context.Background(), fs.Arg(0), fs.Arg(1), lim, log); err != nil {
		log.Error("storage initializer failed", "err", err)
		os.Exit(1)
	}
}
