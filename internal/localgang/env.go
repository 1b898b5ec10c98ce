package localgang

import (
	"strconv"
	"strings"
)

// DefaultPort is the Training Operator's default xgboostjob-port (XGBoostJobDefaultPort).
const DefaultPort = 9999

// OperatorEnv returns the variables the Kubeflow Training Operator v1 appends to the container
// env of an XGBoostJob replica, in the operator's order (SetPodEnv in
// pkg/controller.v1/xgboost/xgboost.go, v1.9): MASTER_PORT, MASTER_ADDR, WORLD_SIZE, RANK,
// PYTHONUNBUFFERED=1 and, only when the job has more than one replica, WORKER_PORT and
// WORKER_ADDRS. rank is 0 for the Master and 1..N for Workers (the operator adds the master
// replica count to a worker's index); WORLD_SIZE is 1 + len(workerAddrs). In a cluster
// masterAddr is "<job>-master-0" and workerAddrs are "<job>-worker-<i>", i = 0..N-1.
func OperatorEnv(masterAddr string, masterPort int, workerAddrs []string, workerPort, rank int) []string {
	world := 1 + len(workerAddrs)
	env := []string{
		"MASTER_PORT=" + strconv.Itoa(masterPort),
		"MASTER_ADDR=" + masterAddr,
		"WORLD_SIZE=" + strconv.Itoa(world),
		"RANK=" + strconv.Itoa(rank),
		"PYTHONUNBUFFERED=1",
	}
	// The operator sets these for LightGBM and only when there is more than one replica.
	if world > 1 {
		env = append(env,
			"WORKER_PORT="+strconv.Itoa(workerPort),
			"WORKER_ADDRS="+strings.Join(workerAddrs, ","))
	}
	return env
}

// distributedKeys are the variables that tell a trainer where its gang is: those the Training
// Operator v1 sets and those Kubeflow Trainer v2's XGBoost runtime sets. They are removed from
// the inherited environment so a replica never sees a stale value (say, when the launcher itself
// runs inside a training pod) next to the ones the launcher sets.
var distributedKeys = []string{
	"MASTER_PORT", "MASTER_ADDR", "WORLD_SIZE", "RANK", "PYTHONUNBUFFERED", "WORKER_PORT", "WORKER_ADDRS",
	"DMLC_TRACKER_URI", "DMLC_TRACKER_PORT", "DMLC_TASK_ID", "DMLC_NUM_WORKER",
}

// replicaEnv is base without the distributed keys, followed by the operator's variables, as a
// pod sees the container env with the operator's entries appended.
func replicaEnv(base []string, masterAddr string, masterPort int, workerAddrs []string, workerPort, rank int) []string {
	env := make([]string, 0, len(base)+7)
	for _, kv := range base {
		key, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, k := range distributedKeys {
			if key == k {
				drop = true
				break
			}
		}
		if !drop {
			env = append(env, kv)
		}
	}
	return append(env, OperatorEnv(masterAddr, masterPort, workerAddrs, workerPort, rank)...)
}
