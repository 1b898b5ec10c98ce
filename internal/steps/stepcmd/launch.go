package stepcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gangboost/gangboost/internal/kfp"
	"github.com/gangboost/gangboost/internal/kube/kubecfg"
	"github.com/gangboost/gangboost/internal/plumbing/repodir"
	"github.com/gangboost/gangboost/internal/steps/launch"
	"github.com/gangboost/gangboost/internal/steps/launch/kube"
	"github.com/gangboost/gangboost/internal/steps/launch/local"
	"github.com/gangboost/gangboost/internal/steps/storecreds"
)

// Launch is launch-xgboostjob: it trains a model as a gang-scheduled XGBoostJob (or, with
// GANGBOOST_BACKEND=local, a gang of local gangboost-train processes) and writes the Model and
// Metrics artifacts, model_uri and job_name.
func Launch(args []string) int {
	var kubeconfig, trainerImage *string
	flags := func(fs *flag.FlagSet) {
		kubeconfig = fs.String("kubeconfig", "", "kubeconfig file; default $KUBECONFIG, else the in-cluster service account")
		trainerImage = fs.String("image", Image, "trainer image when the input image is not set")
	}
	return kfp.RunComponent("launch-xgboostjob", args, flags, func(ctx context.Context, e *kfp.Executor) error {
		return launchJob(ctx, e, *kubeconfig, *trainerImage)
	})
}

func launchJob(ctx context.Context, exec *kfp.Executor, kubeconfig, image string) error {
	step := kubecfg.Load(kubeconfig)
	ns := step.Namespace
	isLocal := kfp.LocalBackend()
	if isLocal && ns == "" {
		ns = "default" // a local gang has no namespace; the job's name and labels still carry one
	}
	// What the trainer beside this binary (the default image's) was built with: a CPU-only
	// libxgboost refuses GPU requests before anything is created.
	build, err := launch.OwnTrainerBuild()
	if err != nil {
		return err
	}
	// Inputs are checked before the cluster is contacted.
	job, localClaim, err := launch.JobFromExecutor(exec, launch.Defaults{Namespace: ns, Image: image, Build: build})
	if err != nil {
		return err
	}
	// A version that exists is refused before anything is created: in an object store, with the
	// key pair of the trainer pods' Secret where this step may read it.
	if o := &job.Data.ObjectStore; !isLocal {
		secret := storecreds.Secret{Name: o.Secret, AccessKeyKey: o.AccessKeyKey, SecretKeyKey: o.SecretKeyKey}
		if err := secret.Apply(ctx, secretReader(kubeconfig, job.Namespace), job.ModelStore, &o.Config, os.Stdout); err != nil {
			fmt.Printf("model version %s/%s: %v\n", job.ModelName, job.ModelVersion, err)
		}
	}
	if err := job.CheckModelVersion(ctx, localClaim); errors.Is(err, launch.ErrNoStoreCredentials) {
		fmt.Printf("model version %s/%s not checked before the job (%v); the trainer checks it before reading any data\n", job.ModelName, job.ModelVersion, err)
	} else if err != nil {
		return err
	}
	var backend launch.Backend
	if isLocal {
		if job.API == launch.APITrainJob {
			fmt.Printf("job_api %s: the local backend runs the gang as local processes, as for every job_api\n", job.API)
		}
		if backend, err = localJobBackend(localClaim); err != nil {
			return err
		}
	} else {
		cfg, err := step.RESTConfig()
		if err != nil {
			return err
		}
		if backend, err = kube.New(cfg, job.API); err != nil {
			return err
		}
	}
	l := &launch.Launcher{Backend: backend, Log: os.Stdout}
	res, err := l.Run(ctx, job)
	if err != nil {
		return err
	}
	if err := launch.WriteOutputs(ctx, exec, job, localClaim); err != nil {
		return err
	}
	uri, err := job.ModelURI()
	if err != nil {
		return err
	}
	if res.Adopted {
		fmt.Printf("job %s (adopted) succeeded: model %s\n", res.Job, uri)
	} else {
		fmt.Printf("job %s succeeded: model %s\n", res.Job, uri)
	}
	return nil
}

// localJobBackend is the local job backend (GANGBOOST_BACKEND=local, set by the local pipeline
// runner): the gang runs as gangboost-train processes from $GANGBOOST_BIN_DIR (default <repo>/bin,
// repodir.BinDir), with the folder where this step sees the claim standing for it.
func localJobBackend(claim string) (*local.Backend, error) {
	binDir, err := repodir.BinDir()
	if err != nil {
		return nil, err
	}
	if claim == "" || !filepath.IsAbs(claim) {
		return nil, fmt.Errorf("GANGBOOST_BACKEND=local: the claim's local folder (pvc_local_path or pvc_mount_path) must be an absolute path, got %q", claim)
	}
	return &local.Backend{Trainer: filepath.Join(binDir, "gangboost-train"), Root: claim}, nil
}
