// Command gangboost compiles the xgboost-volcano pipeline package, uploads it to Kubeflow
// Pipelines and starts runs of it:
//
//	gangboost pipeline compile [-o FILE] [--mount-path PATH] [--registry R] [--components-dir DIR]
//	gangboost pipeline upload --host URL [--name N] [--description D] [--namespace NS] [--version V] [--token T] FILE
//	gangboost pipeline run --host URL [--namespace NS --experiment NAME | --experiment-id E] [--pipeline NAME | --pipeline-id ID] [--version-id V] [--param k=v ...]
//	gangboost pipeline run --local FILE ...
//	gangboost rollback [--namespace NS] NAME
//	gangboost version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/gangboost/gangboost/components"
	"github.com/gangboost/gangboost/internal/contract/version"
	"github.com/gangboost/gangboost/internal/kfp/kfpapi"
	"github.com/gangboost/gangboost/internal/kfp/localrun"
	"github.com/gangboost/gangboost/pipelines"
)

const usage = `usage:
  gangboost pipeline compile [-o FILE] [--mount-path PATH] [--registry R] [--components-dir DIR]
  gangboost pipeline upload --host URL [flags] FILE
  gangboost pipeline run --host URL [flags] [--param key=value ...]
  gangboost pipeline run --local FILE [flags]
  gangboost rollback [--namespace NS] NAME   serve the model an InferenceService's last promotion replaced
  gangboost version
Run a command with -h for its flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "version", "--version", "-version":
		fmt.Fprintln(stdout, "gangboost", version.Version)
		return 0
	case "pipeline":
	case "rollback":
		return rollback(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "gangboost: unknown command %q\n%s", args[0], usage)
		return 2
	}
	if len(args) < 2 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	rest := args[2:]
	switch args[1] {
	case "compile":
		return compile(rest, stdout, stderr)
	case "upload":
		return upload(ctx, rest, stdout, stderr)
	case "run":
		if local(rest) {
			return runLocal(ctx, rest)
		}
		return runRemote(ctx, rest, stdout, stderr)
	}
	fmt.Fprintf(stderr, "gangboost: unknown pipeline command %q\n%s", args[1], usage)
	return 2
}

// local reports whether a run's flags ask for the local runner.
func local(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--local" || a == "-local" || strings.HasPrefix(a, "--local=") || strings.HasPrefix(a, "-local=") {
			return true
		}
	}
	return false
}

// parse parses a command's flags; done is set when it printed help or an error (code is then
// the exit code).
func parse(fs *flag.FlagSet, args []string, stderr io.Writer) (code int, done bool) {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, true
		}
		return 2, true
	}
	return 0, false
}

func fail(stderr io.Writer, err error) int {
	fmt.Fprintln(stderr, "gangboost:", err)
	return 1
}

func compile(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gangboost pipeline compile", flag.ContinueOnError)
	out := fs.String("o", "", "write the package to FILE (default standard output)")
	mountPath := fs.String("mount-path", pipelines.DefaultOptions().MountPath, "where every step mounts the claim")
	registry := fs.String("registry", version.Registry, "registry every image reference names (REGISTRY/gangboost:"+version.Version+"); default the one this binary was built for")
	componentsDir := fs.String("components-dir", "", "also write every component's spec, its image in --registry, to DIR/<name>/component.yaml")
	if code, done := parse(fs, args, stderr); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gangboost pipeline compile: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if strings.TrimSpace(*registry) == "" || strings.ContainsAny(*registry, " \t\n@") || strings.Contains(*registry, "://") {
		fmt.Fprintf(stderr, "gangboost pipeline compile: --registry %q: want a registry and path such as registry.example.com/ml or localhost:5000 (no scheme, no digest)\n", *registry)
		return 2
	}
	b, err := pipelines.Compile(pipelines.Options{MountPath: *mountPath, Registry: *registry})
	if err != nil {
		return fail(stderr, err)
	}
	if *componentsDir != "" {
		for _, name := range components.Names() {
			spec, err := components.YAMLIn(name, *registry)
			if err == nil {
				err = os.MkdirAll(filepath.Join(*componentsDir, name), 0o755)
			}
			if err == nil {
				err = os.WriteFile(filepath.Join(*componentsDir, name, "component.yaml"), spec, 0o644)
			}
			if err != nil {
				return fail(stderr, fmt.Errorf("component %s: %w", name, err))
			}
		}
	}
	if *out == "" {
		_, err = stdout.Write(b)
	} else {
		err = os.WriteFile(*out, b, 0o644)
	}
	if err != nil {
		return fail(stderr, err)
	}
	return 0
}

// server holds the flags every command that talks to KFP takes.
type server struct {
	host, token, namespace string
}

func (s *server) flags(fs *flag.FlagSet) {
	fs.StringVar(&s.host, "host", os.Getenv("KFP_HOST"), "KFP API server or UI URL, e.g. http://localhost:8080 (default $KFP_HOST)")
	fs.StringVar(&s.token, "token", "", "bearer token (default $KFP_TOKEN, else "+kfpapi.TokenFile+" when it exists)")
	fs.StringVar(&s.namespace, "namespace", "", "the profile namespace of the pipeline (multi-user KFP)")
}

func upload(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gangboost pipeline upload", flag.ContinueOnError)
	var s server
	s.flags(fs)
	name := fs.String("name", "", "pipeline name (default the package's pipelineInfo.name)")
	description := fs.String("description", "", "pipeline or version description (default the package's)")
	versionName := fs.String("version", "", "name of the new version when the pipeline exists (default <gangboost version>-<package hash>)")
	if code, done := parse(fs, args, stderr); done {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: gangboost pipeline upload --host URL [flags] FILE")
		return 2
	}
	up, err := kfpapi.PrepareUpload(fs.Arg(0), kfpapi.PublishOptions{Name: *name, Description: *description, Namespace: s.namespace, Version: *versionName})
	if err != nil {
		return fail(stderr, err)
	}
	c, err := kfpapi.Connect(s.host, s.token)
	if err != nil {
		return fail(stderr, err)
	}
	pub, err := c.Publish(ctx, up.Package, up.PublishOptions)
	if err != nil {
		return fail(stderr, err)
	}
	fmt.Fprintln(stdout, pub)
	fmt.Fprintln(stdout, c.PipelineURL(pub.PipelineID))
	return 0
}

func runRemote(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gangboost pipeline run", flag.ContinueOnError)
	var s server
	s.flags(fs)
	o := kfpapi.RunOptions{Warn: func(msg string) { fmt.Fprintln(stderr, "gangboost:", msg) }, Info: func(msg string) { fmt.Fprintln(stdout, msg) }}
	fs.StringVar(&o.Pipeline, "pipeline", pipelines.Name, "pipeline name")
	fs.StringVar(&o.PipelineID, "pipeline-id", "", "pipeline ID (instead of --pipeline)")
	fs.StringVar(&o.VersionID, "version-id", "", "pipeline version ID (default the newest version)")
	fs.StringVar(&o.Experiment, "experiment", "", "experiment name, found or created in --namespace (required by multi-user KFP: a run's namespace is its experiment's)")
	fs.StringVar(&o.ExperimentID, "experiment-id", "", "experiment ID (instead of --experiment; neither: KFP's default experiment, single-user KFP only)")
	fs.StringVar(&o.Name, "name", "", "run display name (default <pipeline> <UTC time>)")
	fs.StringVar(&o.ServiceAccount, "service-account", "", "service account of the run's pods (default KFP's)")
	var ps localrun.ParamFlags
	fs.Var(&ps, "param", "pipeline parameter key=value, typed as the pipeline declares it (repeatable)")
	if code, done := parse(fs, args, stderr); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gangboost pipeline run: unexpected argument %q (a package file runs with --local)\n", fs.Arg(0))
		return 2
	}
	c, err := kfpapi.Connect(s.host, s.token)
	if err != nil {
		return fail(stderr, err)
	}
	o.Namespace, o.Params = s.namespace, ps
	r, err := c.StartRun(ctx, o)
	var none *kfpapi.NoPipelineError
	if errors.As(err, &none) {
		err = fmt.Errorf("%w; upload it first: gangboost pipeline upload --host %s %s", err, s.host, pipelines.File)
	}
	if err != nil {
		return fail(stderr, err)
	}
	fmt.Fprintf(stdout, "run %s\n%s\n", r.RunID, c.RunURL(r.RunID))
	return 0
}
