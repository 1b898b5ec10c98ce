package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gangboost/gangboost/internal/kfp/localrun"
	"github.com/gangboost/gangboost/internal/kfp/localrun/demo"
)

// runLocal runs a pipeline package on this machine (gangboost pipeline run --local FILE). args are
// the run command's arguments, --local included.
func runLocal(ctx context.Context, args []string) int {
	return runLocalTo(ctx, args, os.Stdout, os.Stderr)
}

func runLocalTo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	file, args := localFile(args)
	fs := flag.NewFlagSet("gangboost pipeline run --local", flag.ContinueOnError)
	var params localrun.ParamFlags
	fs.Var(&params, "param", "a pipeline parameter, name=value (repeatable); typed as the pipeline declares it")
	workDir := fs.String("workdir", "gangboost-local", "folder for the claims (pvc/<claim>), recorded processes and runs (pipeline-root/)")
	keepServing := fs.Bool("keep-serving", false, "after a successful run, keep the model server up until Ctrl-C")
	binDir := fs.String("bin-dir", "", "folder of the binaries the components' commands name (default: this program's folder)")
	grace := fs.Duration("grace", 0, "how long a stopped step has between SIGTERM and SIGKILL (default 10s)")
	backend := fs.String("backend", localrun.BackendLocal, "local: the job and the model server run here; kubernetes: the steps act on the cluster of $KUBECONFIG (XGBoostJob, InferenceService)")
	var claimDirs localrun.ParamFlags
	fs.Var(&claimDirs, "claim-dir", "claim=DIR: the folder holding a claim's files here (repeatable); default <workdir>/pvc/<claim>")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: gangboost pipeline run --local FILE [--param name=value ...] [--workdir DIR] [--keep-serving] [--bin-dir DIR] [--backend local|kubernetes] [--claim-dir claim=DIR ...]")
		fs.PrintDefaults()
	}
	if code, done := parse(fs, args, stderr); done {
		return code
	}
	if file == "" && fs.NArg() == 1 {
		file = fs.Arg(0)
	} else if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gangboost pipeline run --local: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if file == "" {
		fmt.Fprintln(stderr, "gangboost pipeline run --local: name the pipeline package (--local FILE)")
		return 2
	}
	if *binDir == "" {
		dir, err := localrun.ProgramDir()
		if err != nil {
			fmt.Fprintf(stderr, "gangboost pipeline run --local: find this program's folder (set --bin-dir): %v\n", err)
			return 1
		}
		*binDir = dir
	}
	opts, err := demo.RunOptions(file, params, stdout, *keepServing)
	if err == nil {
		opts.Claims, err = localrun.ParseClaimDirs(claimDirs)
	}
	var res *localrun.Result
	if err == nil {
		opts.WorkDir, opts.BinDir, opts.Backend, opts.Grace = *workDir, *binDir, *backend, *grace
		res, err = localrun.Run(ctx, opts)
	}
	code, message := localrun.ExitStatus(res, err, *backend)
	if message != "" {
		fmt.Fprintf(stderr, "gangboost pipeline run --local: %s\n", message)
	}
	return code
}

// localFile takes the package file out of the arguments: --local FILE, --local=FILE, or (with a
// bare --local) the first argument that is not a flag.
func localFile(args []string) (string, []string) {
	var rest []string
	file := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--local" || a == "-local":
			if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
				file = args[i+1]
				i++
			}
		case strings.HasPrefix(a, "--local=") || strings.HasPrefix(a, "-local="):
			file = a[strings.Index(a, "=")+1:]
		default:
			rest = append(rest, a)
		}
	}
	return file, rest
}
