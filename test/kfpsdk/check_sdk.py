"""Loads gangboost's specs with KFP's real Python SDK and compiles the worked example.

Usage: python3 check_sdk.py REPO OUTDIR
Prints one "ok ..." line per check and "FAIL ..." for each failure; exits 1 on any failure.
"""
import keyword
import pathlib
import runpy
import sys

import yaml
import kfp
from kfp import components, kubernetes  # noqa: F401 (kfp-kubernetes must import)

repo, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
failures = []


def check(cond, msg):
    print(("ok   " if cond else "FAIL ") + msg)
    if not cond:
        failures.append(msg)


print(f"kfp {kfp.__version__}, kfp-kubernetes {kubernetes.__version__}")
specs = sorted(repo.glob("components/*/component.yaml")) + [repo / "pipelines" / "xgboost-volcano.yaml"]
check(len(specs) == 5, f"{len(specs)} specs: the four components and the package")
for path in specs:
    rel = path.relative_to(repo)
    comp = components.load_component_from_file(str(path))
    spec = comp.component_spec
    ir = next(yaml.safe_load_all(path.read_text()))
    want = ir["pipelineInfo"]["description"]
    desc = comp.description or ""
    check(desc.startswith(want), f"{rel}: the SDK keeps the description ({len(desc)} chars)")
    inputs = spec.inputs or {}
    outputs = spec.outputs or {}
    for name in list(inputs) + list(outputs):
        check(name.isidentifier() and not keyword.iskeyword(name), f"{rel}: {name} is a Python keyword argument")
    documented = [n for n in inputs if f"\n    {n}: " in desc]
    check(len(documented) == len(inputs), f"{rel}: the description documents {len(documented)}/{len(inputs)} inputs")
    check(not any(n in inputs for n in ("lambda", "alpha")), f"{rel}: no input named lambda or alpha")
    if rel.name == "xgboost-volcano.yaml":
        check({"model", "model_uri", "endpoint_url", "accuracy"} <= set(outputs),
              f"{rel}: pipeline outputs {sorted(outputs)}")
    print(f"     {comp.name}: {len(inputs)} inputs, {len(outputs)} outputs")

# The worked example compiles with the real SDK; what it compiled is checked from the files.
out.mkdir(parents=True, exist_ok=True)
target = out / "my-xgboost.yaml"
sys.argv = ["pipeline.py", str(target)]
runpy.run_path(str(repo / "examples" / "python-pipeline" / "pipeline.py"), run_name="__main__")
for name, tasks in (("my-xgboost.yaml", 4), ("my-xgboost-package-as-step.yaml", 2)):
    docs = list(yaml.safe_load_all((out / name).read_text()))
    pipeline = docs[0]
    dag = pipeline["root"]["dag"]["tasks"]
    check(len(dag) == tasks, f"{name}: {len(dag)} tasks at the root, want {tasks}")
    for tname, task in dag.items():
        check(not task.get("cachingOptions", {}).get("enableCache", False), f"{name}: {tname} is not cached")
    if name == "my-xgboost.yaml":
        executors = docs[1]["platforms"]["kubernetes"]["deploymentSpec"]["executors"]
        for ex in pipeline["deploymentSpec"]["executors"]:
            mounts = executors.get(ex, {}).get("pvcMount", [])
            check(len(mounts) == 1 and mounts[0]["mountPath"] == "/mnt/pvc" and mounts[0].get("constant") == "gangboost-models",
                  f"{name}: {ex} mounts gangboost-models at /mnt/pvc")
        launch = dag["launch-xgboostjob"]["inputs"]["parameters"]
        check(launch["run_id"]["runtimeValue"]["constant"] == "{{$.pipeline_job_uuid}}" and
              launch["task_name"]["runtimeValue"]["constant"] == "{{$.pipeline_task_name}}",
              f"{name}: launch gets the run's id and its task name from KFP's placeholders")
        check(launch["reg_lambda"]["componentInputParameter"] == "reg_lambda", f"{name}: reg_lambda passed as a keyword")
        check(pipeline["pipelineInfo"]["description"].startswith("Iris with a deeper model"), f"{name}: the pipeline's description")
    else:
        gate = dag["gate"]["inputs"]["parameters"]["accuracy"]["taskOutputParameter"]
        check(gate == {"producerTask": "xgboost-volcano", "outputParameterKey": "accuracy"},
              f"{name}: the package's accuracy output feeds the next step ({gate})")

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
