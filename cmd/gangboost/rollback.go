package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/gangboost/gangboost/internal/kube/kubecfg"
	deploykube "github.com/gangboost/gangboost/internal/steps/deploy/kube"
)

// rollback serves an InferenceService's previous model again (the one its last promotion
// replaced), without a moment in which it does not answer: deploykube.Backend.Rollback.
func rollback(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gangboost rollback", flag.ContinueOnError)
	fs.SetOutput(stderr)
	namespace := fs.String("namespace", "", "the InferenceService's namespace; default the kubeconfig context's")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig file; default $KUBECONFIG, else the in-cluster service account")
	timeout := fs.Duration("timeout", 5*time.Minute, "how long the previous model may take to answer before the rollback is abandoned (the current model serves on)")
	drain := fs.Duration("drain", deploykube.DefaultPromotionDrain, "how long the model rolled back from still answers at its old address once the service's address moved (0 to 1h)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: gangboost rollback [--namespace NS] [--kubeconfig FILE] [--timeout D] [--drain D] NAME")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 || *timeout <= 0 || *drain < 0 || *drain > time.Hour {
		fs.Usage()
		return 2
	}
	step := kubecfg.Load(*kubeconfig)
	ns := *namespace
	if ns == "" {
		ns = step.Namespace
	}
	if ns == "" {
		fmt.Fprintln(stderr, "gangboost rollback: no namespace: give --namespace")
		return 2
	}
	cfg, err := step.RESTConfig()
	if err != nil {
		fmt.Fprintln(stderr, "gangboost rollback:", err)
		return 1
	}
	b, err := deploykube.New(cfg)
	if err != nil {
		fmt.Fprintln(stderr, "gangboost rollback:", err)
		return 1
	}
	b.PromotionDrain = *drain
	ctx, cancel := context.WithTimeout(ctx, *timeout+*drain)
	defer cancel()
	ep, model, err := b.Rollback(ctx, ns, fs.Arg(0), func(line string) { fmt.Fprintln(stdout, line) })
	if err != nil {
		fmt.Fprintln(stderr, "gangboost rollback:", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s/%s serves %s at %s\n", ns, fs.Arg(0), model, ep.URL)
	return 0
}
