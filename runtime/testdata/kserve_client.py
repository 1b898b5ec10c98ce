"""Calls a V2 server the way KServe's InferenceRESTClient does, with requests + numpy, and checks
every answer against xgboost's own Booster.predict on the same model file.

usage: kserve_client.py BASE_URL MODEL_NAME MODEL_FILE NUM_FEATURES
Prints one "ok <check>" line per check; exits non-zero on the first mismatch.
"""
import json
import sys
import uuid

import numpy as np
import requests
import xgboost as xgb

base, model, model_file, nfeat = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
infer_url = f"{base}/v2/models/{model}/infer"

rng = np.random.default_rng(11)
X = rng.uniform(0, 8, size=(64, nfeat)).astype(np.float32)
X[rng.random(X.shape) < 0.1] = np.nan  # missing values travel as NaN
booster = xgb.Booster(model_file=model_file)
want = booster.predict(xgb.DMatrix(X, missing=np.nan))


def check(name, got):
    got = np.asarray(got, dtype=np.float32).reshape(want.shape)
    if not np.allclose(got, want, rtol=0, atol=1e-6):
        print(f"FAIL {name}: max diff {np.nanmax(np.abs(got - want))}", file=sys.stderr)
        sys.exit(1)
    print(f"ok {name}")


# 1. JSON, as InferRequest.to_rest() without binary data: uuid id, the extra model_name field.
rid = str(uuid.uuid4())
body = {
    "id": rid,
    "model_name": model,
    "inputs": [{"name": "input-0", "shape": list(X.shape), "datatype": "FP32", "data": X.flatten().tolist()}],
}
# json.dumps writes NaN for missing values, as the SDK does.
r = requests.post(infer_url, data=json.dumps(body), headers={"Content-Type": "application/json"}, timeout=10)
r.raise_for_status()
resp = r.json()
assert resp["id"] == rid and resp["model_name"] == model, resp
out = resp["outputs"][0]
assert out["name"] == "output-0" and out["datatype"] == "FP32" and out["shape"] == list(want.shape), out
check("json", out["data"])

# 2. Binary tensor extension both ways, as the SDK sends by default.
raw = X.astype("<f4").tobytes()
header = {
    "id": str(uuid.uuid4()),
    "model_name": model,
    "inputs": [{"name": "input-0", "shape": list(X.shape), "datatype": "FP32", "parameters": {"binary_data_size": len(raw)}}],
    "outputs": [{"name": "output-0", "parameters": {"binary_data": True}}],
}
hjson = json.dumps(header).encode()
r = requests.post(
    infer_url,
    data=hjson + raw,
    headers={"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": str(len(hjson))},
    timeout=10,
)
r.raise_for_status()
n = int(r.headers["Inference-Header-Content-Length"])
head = json.loads(r.content[:n])
size = head["outputs"][0]["parameters"]["binary_data_size"]
check("binary", np.frombuffer(r.content[n : n + size], dtype="<f4"))

# 3. FP64 binary input, JSON output.
raw64 = X.astype("<f8").tobytes()
header = {"inputs": [{"name": "input-0", "shape": list(X.shape), "datatype": "FP64", "parameters": {"binary_data_size": len(raw64)}}]}
hjson = json.dumps(header).encode()
r = requests.post(infer_url, data=hjson + raw64, headers={"Inference-Header-Content-Length": str(len(hjson))}, timeout=10)
r.raise_for_status()
check("binary fp64", r.json()["outputs"][0]["data"])

# 4. V1 protocol: NaN cannot travel in V1 instances portably, so use complete rows.
Xc = np.nan_to_num(X, nan=1.0)
want = booster.predict(xgb.DMatrix(Xc))
r = requests.post(f"{base}/v1/models/{model}:predict", json={"instances": Xc.tolist()}, timeout=10)
r.raise_for_status()
check("v1", r.json()["predictions"])

# 5. An error comes back as {"error": ...} with status 400.
r = requests.post(infer_url, json={"inputs": [{"name": "input-0", "shape": [1, nfeat + 1], "datatype": "FP32", "data": [0.0] * (nfeat + 1)}]}, timeout=10)
assert r.status_code == 400 and "error" in r.json(), (r.status_code, r.text)
print("ok error shape")
