"""Python V2 / Open Inference Protocol server for the load test's comparison.

What users run today for XGBoost on KServe is its Python xgbserver: FastAPI on uvicorn, the
request decoded into numpy, xgboost.Booster.predict on a DMatrix (nthread=1, as KServe's runtime
starts it), and the result returned as one V2 output "output-0". This file does the same with
Debian's packages only (python3-fastapi, python3-uvicorn, python3-xgboost, python3-numpy; uvicorn
uses python3-uvloop and python3-httptools when installed, as KServe's "uvicorn[standard]" does).
It parses the body with the standard json module instead of KServe's pydantic models, which only
makes it faster than the real server.

Run with Debian's interpreter: /usr/bin/python3 pyserver.py --model_dir DIR --model_name NAME --port P
"""

import argparse
import json
import os
import uuid

import numpy as np
import uvicorn
import xgboost as xgb
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

# V2 datatypes of KServe's numpy mapping (kserve.utils.numpy_codec).
DATATYPE_TO_NUMPY = {
    "BOOL": np.bool_,
    "UINT8": np.uint8,
    "UINT16": np.uint16,
    "UINT32": np.uint32,
    "UINT64": np.uint64,
    "INT8": np.int8,
    "INT16": np.int16,
    "INT32": np.int32,
    "INT64": np.int64,
    "FP16": np.float16,
    "FP32": np.float32,
    "FP64": np.float64,
}
NUMPY_TO_DATATYPE = {np.dtype(v): k for k, v in DATATYPE_TO_NUMPY.items()}


def load_booster(model_dir):
    """Loads the one XGBoost model file (never a pickle) of model_dir, with one thread."""
    for name in ("model.json", "model.ubj", "model.bst"):
        path = os.path.join(model_dir, name)
        if os.path.exists(path):
            booster = xgb.Booster(params={"nthread": 1}, model_file=path)
            return booster
    raise FileNotFoundError("no model.json, model.ubj or model.bst in %s" % model_dir)


def build_app(model_name, booster):
    app = FastAPI()

    @app.get("/v2/health/live")
    async def live():
        return {"live": True}

    @app.get("/v2/health/ready")
    async def ready():
        return {"ready": True}

    @app.post("/v2/models/{name}/infer")
    async def infer(name: str, request: Request):
        if name != model_name:
            return JSONResponse({"error": "Model with name %s does not exist." % name}, status_code=404)
        try:
            body = json.loads(await request.body())
            tensor = body["inputs"][0]
            data = np.asarray(tensor["data"], dtype=DATATYPE_TO_NUMPY[tensor["datatype"]])
            data = data.reshape(tensor["shape"])
        except (KeyError, IndexError, TypeError, ValueError) as e:
            return JSONResponse({"error": "invalid input: %r" % e}, status_code=400)
        result = booster.predict(xgb.DMatrix(data, nthread=1))
        out = {
            "model_name": model_name,
            "id": body.get("id") or str(uuid.uuid4()),
            "outputs": [
                {
                    "name": "output-0",
                    "shape": list(result.shape),
                    "datatype": NUMPY_TO_DATATYPE[result.dtype],
                    "data": result.flatten().tolist(),
                }
            ],
        }
        return Response(json.dumps(out), media_type="application/json")

    return app


def available(module):
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model_dir", required=True)
    p.add_argument("--model_name", required=True)
    p.add_argument("--port", type=int, default=8070)
    args = p.parse_args()
    app = build_app(args.model_name, load_booster(args.model_dir))
    # The fastest event loop and HTTP parser uvicorn can use here, named explicitly so the log
    # says what ran; one worker process, as KServe's model server starts by default.
    loop = "uvloop" if available("uvloop") else "asyncio"
    http = "httptools" if available("httptools") else "h11"
    print("pyserver: uvicorn %s, loop %s, http %s, xgboost %s" % (uvicorn.__version__, loop, http, xgb.__version__), flush=True)
    uvicorn.run(app, host="127.0.0.1", port=args.port, workers=1, loop=loop, http=http, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
