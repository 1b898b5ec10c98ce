"""gangboost's components in a pipeline of your own, with KFP's Python SDK (kfp 2.15, kfp-kubernetes).

    pip install 'kfp==2.15.*' 'kfp-kubernetes==2.15.*'
    python examples/python-pipeline/pipeline.py            # writes my-xgboost.yaml
    python examples/python-pipeline/pipeline.py out.yaml

Then upload my-xgboost.yaml in the KFP UI (or kfp.Client().create_run_from_pipeline_package)
and run it in your profile namespace: the claim (manifests/pvc.yaml) must be there, and the
run's account (the profile's default-editor, or standalone KFP's pipeline-runner) must hold
manifests/kubeflow's roles (README "On a cluster").

Two pipelines:
  my_xgboost       the four components composed by hand, each step mounting the claim
  package_as_step  the whole xgboost-volcano package as one step, its outputs fed downstream
"""
import pathlib
import sys

from kfp import compiler, components, dsl, kubernetes

REPO = pathlib.Path(__file__).resolve().parents[2]
CLAIM = "gangboost-models"  # manifests/pvc.yaml
MOUNT = "/mnt/pvc"  # where every step sees the claim: each component's pvc_mount_path default


def load(name):
    return components.load_component_from_file(str(REPO / "components" / name / "component.yaml"))


prepare_data = load("prepare-data")
launch_xgboostjob = load("launch-xgboostjob")
deploy_inferenceservice = load("deploy-inferenceservice")
evaluate = load("evaluate")
xgboost_volcano = components.load_component_from_file(str(REPO / "pipelines" / "xgboost-volcano.yaml"))


def on_claim(task):
    """Mounts the claim where the step expects it and turns caching off.

    Every gangboost step acts outside KFP's artifact store (files on the claim, an XGBoostJob, an
    InferenceService, a live endpoint): a cache hit would skip an effect the next step relies on.
    """
    kubernetes.mount_pvc(task, pvc_name=CLAIM, mount_path=MOUNT)
    task.set_caching_options(False)
    return task


@dsl.pipeline(
    name="my-xgboost",
    description="Iris with a deeper model: gangboost's components composed in Python.",
)
def my_xgboost(workers: int = 2, max_depth: str = "4", reg_lambda: str = "1.5") -> float:
    data = on_claim(prepare_data(dataset="iris", pvc_name=CLAIM))
    train = on_claim(launch_xgboostjob(
        # The run and task this job belongs to: launch names the XGBoostJob after them and adopts
        # it on a retry. KFP resolves these placeholders when a task passes them.
        run_id=dsl.PIPELINE_JOB_ID_PLACEHOLDER,
        task_name=dsl.PIPELINE_TASK_NAME_PLACEHOLDER,
        model_name="iris-deep",
        train_data=data.outputs["train_path"],
        eval_data=data.outputs["test_path"],
        label=data.outputs["label"],
        objective="multi:softprob",
        num_round=50,
        max_depth=max_depth,
        reg_lambda=reg_lambda,
        workers=workers,
        pvc_name=CLAIM,
        pvc_local_path=MOUNT,
    ))
    serve = on_claim(deploy_inferenceservice(
        name="iris-deep",
        model_uri=train.outputs["model_uri"],
        run_id=dsl.PIPELINE_JOB_ID_PLACEHOLDER,
        pvc_name=CLAIM,
    ))
    check = on_claim(evaluate(
        url=serve.outputs["url"],
        model_name=serve.outputs["model_name"],
        test_path=data.outputs["test_path"],
        label=data.outputs["label"],
        model_uri=train.outputs["model_uri"],
        pvc_name=CLAIM,
    ))
    return check.outputs["accuracy"]


@dsl.container_component
def gate(accuracy: float, minimum: float):
    """Fails the run when the served accuracy is below minimum."""
    return dsl.ContainerSpec(
        image="python:3.12-slim",
        command=["python3", "-c", "import sys; a, m = map(float, sys.argv[1:]); sys.exit(a < m)"],
        args=[accuracy, minimum],
    )


@dsl.pipeline(
    name="package-as-step",
    description="The xgboost-volcano package as one step, its served accuracy gated downstream.",
)
def package_as_step(minimum: float = 0.9):
    # The package mounts the claim on each of its own steps (its platform spec).
    run = xgboost_volcano(model_name="iris", workers=2)
    run.set_caching_options(False)
    gate(accuracy=run.outputs["accuracy"], minimum=minimum).set_caching_options(False)


if __name__ == "__main__":
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "my-xgboost.yaml")
    compiler.Compiler().compile(my_xgboost, str(out))
    compiler.Compiler().compile(package_as_step, str(out.with_name(out.stem + "-package-as-step.yaml")))
    print(out)
