"""One libxgboost rabit worker for the tracker's integration test.

usage: rabit_worker.py TRACKER_HOST TRACKER_PORT TASK_ID MODE OUT_JSON
TASK_ID "-" leaves DMLC_TASK_ID unset. MODE is "allreduce", "train" or "loop".
The keys are upper case: libxgboost 1.7 matches DMLC_TRACKER_URI,
DMLC_TRACKER_PORT and DMLC_TASK_ID exactly and ignores lower-case ones.
"""
import json
import sys
import time

import numpy as np
import xgboost as xgb
from xgboost import collective


def main():
    host, port, task, mode, out = sys.argv[1:6]
    args = {"DMLC_TRACKER_URI": host, "DMLC_TRACKER_PORT": int(port)}
    if task != "-":
        args["DMLC_TASK_ID"] = task
    collective.init(**args)
    try:
        rank = collective.get_rank()
        world = collective.get_world_size()
        result = {"rank": rank, "world": world}
        if mode == "allreduce":
            # Small arrays take the tree allreduce, arrays above
            # rabit_reduce_ring_mincount (32K items) the ring allreduce.
            small = np.array([rank + 1, 1], dtype=np.float64)
            result["small_sum"] = collective.allreduce(small, collective.Op.SUM).tolist()
            big = np.full(100_000, rank + 1, dtype=np.float32)
            big = collective.allreduce(big, collective.Op.SUM)
            result["big_sum_min"] = float(big.min())
            result["big_sum_max"] = float(big.max())
            top = collective.allreduce(np.array([rank], dtype=np.int32), collective.Op.MAX)
            result["max_rank"] = int(top[0])
            collective.communicator_print(f"rank {rank} of {world} reduced")
        elif mode == "train":
            rng = np.random.RandomState(7)
            x = rng.rand(600, 5)
            y = (x[:, 0] + 0.5 * x[:, 1] > 0.8).astype(np.float32)
            dtrain = xgb.DMatrix(x[rank::world], label=y[rank::world])
            params = {"objective": "binary:logistic", "tree_method": "hist",
                      "max_depth": 3, "nthread": 1, "seed": 0}
            booster = xgb.train(params, dtrain, num_boost_round=5)
            result["model"] = bytes(booster.save_raw("json")).decode()
            result["params"] = params
            result["shard"] = [rank, world]
        elif mode == "loop":
            # Allreduce until killed: for tests that kill a rank mid-job.
            collective.communicator_print(f"rank {rank} looping")
            for _ in range(600):
                collective.allreduce(np.ones(1000, dtype=np.float32), collective.Op.SUM)
                time.sleep(0.05)
        else:
            raise SystemExit(f"unknown mode {mode!r}")
    finally:
        collective.finalize()
    if mode == "train":
        # The same shard trained after finalize, alone: what this rank would
        # have produced had it not been linked to the others.
        booster = xgb.train(result["params"], dtrain, num_boost_round=5)
        result["shard_model"] = bytes(booster.save_raw("json")).decode()
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
