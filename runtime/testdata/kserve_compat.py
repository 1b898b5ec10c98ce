"""Sends what KServe's Python client (v0.14) sends to a server it believes is KServe's xgbserver,
and checks the answers against xgboost's own Booster.predict on the same model file.

usage: kserve_compat.py BASE_URL MODEL_NAME MODEL_FILE FEATURE,NAMES,...
Prints one "ok <check>" line per check; exits non-zero on the first mismatch.

The payloads follow KServe's python/kserve/kserve/protocol/infer_type.py: a pandas DataFrame
becomes one InferInput per column (shape [N], the column's own datatype) with the request
parameter content_type "pd"; binary data is the columns' little-endian bytes one after another,
each input naming its binary_data_size.
"""
import json
import sys
import uuid

import numpy as np
import requests
import xgboost as xgb

base, model, model_file, names = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(",")
infer_url = f"{base}/v2/models/{model}/infer"
nfeat = len(names)

rng = np.random.default_rng(5)
X = rng.uniform(0, 8, size=(16, nfeat)).astype(np.float32)
X[:, 0] = np.round(X[:, 0])  # a whole-number column, sent as INT64 as pandas types it
booster = xgb.Booster(model_file=model_file)
want = booster.predict(xgb.DMatrix(X))


def check(name, got):
    got = np.asarray(got, dtype=np.float32).reshape(want.shape)
    if not np.allclose(got, want, rtol=0, atol=1e-6):
        print(f"FAIL {name}: max diff {np.max(np.abs(got - want))}", file=sys.stderr)
        sys.exit(1)
    print(f"ok {name}")


def columns():
    """The DataFrame's columns as (name, datatype, values), in reverse order so that matching by
    name, not position, is what makes the answer right; one column per numeric pandas dtype."""
    cols = []
    for j, n in enumerate(names):
        if j == 0:
            cols.append((n, "INT64", X[:, j].astype(np.int64)))
        elif j % 2:
            cols.append((n, "FP64", X[:, j].astype(np.float64)))
        else:
            cols.append((n, "FP32", X[:, j]))
    return cols[::-1]


# 1. GET / as InferenceRESTClient.is_server_live reads it for protocol v1.
r = requests.get(f"{base}/", timeout=10)
r.raise_for_status()
assert r.json() == {"status": "alive"}, r.text
print("ok server live")

# 2. A DataFrame as JSON: one input per column, content_type "pd".
body = {
    "id": str(uuid.uuid4()),
    "model_name": model,
    "parameters": {"content_type": "pd"},
    "inputs": [{"name": n, "shape": [len(v)], "datatype": dt, "data": v.tolist()} for n, dt, v in columns()],
}
r = requests.post(infer_url, data=json.dumps(body), headers={"Content-Type": "application/json"}, timeout=10)
assert r.status_code == 200, r.text
out = r.json()["outputs"][0]
assert out["name"] == "output-0" and out["shape"] == list(want.shape), out
check("pandas json", out["data"])

# 3. The same DataFrame as binary data both ways, as the client sends by default.
blobs, inputs = b"", []
for n, dt, v in columns():
    raw = v.astype({"INT64": "<i8", "FP64": "<f8", "FP32": "<f4"}[dt]).tobytes()
    inputs.append({"name": n, "shape": [len(v)], "datatype": dt, "parameters": {"binary_data_size": len(raw)}})
    blobs += raw
header = json.dumps({"id": str(uuid.uuid4()), "model_name": model, "inputs": inputs,
                     "parameters": {"content_type": "pd", "binary_data_output": True}}).encode()
r = requests.post(infer_url, data=header + blobs,
                  headers={"Content-Type": "application/octet-stream", "Inference-Header-Content-Length": str(len(header))}, timeout=10)
assert r.status_code == 200, r.text
n = int(r.headers["Inference-Header-Content-Length"])
head = json.loads(r.content[:n])
size = head["outputs"][0]["parameters"]["binary_data_size"]
check("pandas binary", np.frombuffer(r.content[n:n + size], dtype="<f4"))

# 4. V1 with TensorFlow Serving's "inputs" key, which xgbserver takes as it takes "instances".
r = requests.post(f"{base}/v1/models/{model}:predict", json={"inputs": X.tolist()}, timeout=10)
assert r.status_code == 200, r.text
check("v1 inputs", r.json()["predictions"])

# 5. A missing or an unknown column is a 400 that names it.
bad = dict(body, inputs=[i for i in body["inputs"] if i["name"] != names[1]])
r = requests.post(infer_url, json=bad, timeout=10)
assert r.status_code == 400 and names[1] in r.json()["error"], (r.status_code, r.text)
extra = dict(body, inputs=body["inputs"] + [{"name": "colour", "shape": [len(X)], "datatype": "FP32", "data": [0.0] * len(X)}])
r = requests.post(infer_url, json=extra, timeout=10)
assert r.status_code == 400 and "colour" in r.json()["error"], (r.status_code, r.text)
print("ok column errors")
