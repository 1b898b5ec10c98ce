// Package gangenv is the distributed-training environment contract: the variables a job
// controller injects into each replica of a training gang, written here for the local backend
// and tests as the Kubeflow Training Operator v1 writes them, and read here by the trainer.
package gangenv

import (
	"fmt"
	"strconv"
	"strings"
)

// The Kubeflow Training Operator v1 contract for an XGBoostJob (SetPodEnv in
// pkg/controller.v1/xgboost/xgboost.go, v1.9).
const (
	MasterPort       = "MASTER_PORT"
	MasterAddr       = "MASTER_ADDR"
	WorldSize        = "WORLD_SIZE"
	Rank             = "RANK"
	PythonUnbuffered = "PYTHONUNBUFFERED"
	WorkerPort       = "WORKER_PORT"
	WorkerAddrs      = "WORKER_ADDRS"
)

// Kubeflow Trainer v2's XGBoost runtime contract.
const (
	TrackerURI  = "DMLC_TRACKER_URI"
	TrackerPort = "DMLC_TRACKER_PORT"
	TaskID      = "DMLC_TASK_ID"
	NumWorker   = "DMLC_NUM_WORKER"
)

// DefaultPort is the Training Operator's default xgboostjob-port (XGBoostJobDefaultPort), the
// MASTER_PORT a replica assumes when the variable is absent.
const DefaultPort = 9999

// Keys are the variables that tell a trainer where its gang is, in both contracts.
var Keys = []string{
	MasterPort, MasterAddr, WorldSize, Rank, PythonUnbuffered, WorkerPort, WorkerAddrs,
	TrackerURI, TrackerPort, TaskID, NumWorker,
}

// IsKey reports whether key is one of Keys.
func IsKey(key string) bool {
	for _, k := range Keys {
		if key == k {
			return true
		}
	}
	return false
}

// OperatorEnv returns the variables the Kubeflow Training Operator v1 appends to the container
// env of an XGBoostJob replica, in the operator's order: MASTER_PORT, MASTER_ADDR, WORLD_SIZE,
// RANK, PYTHONUNBUFFERED=1 and, only when the job has more than one replica, WORKER_PORT and
// WORKER_ADDRS. rank is 0 for the Master and 1..N for Workers (the operator adds the master
// replica count to a worker's index); WORLD_SIZE is 1 + len(workerAddrs). In a cluster
// masterAddr is "<job>-master-0" and workerAddrs are "<job>-worker-<i>", i = 0..N-1.
func OperatorEnv(masterAddr string, masterPort int, workerAddrs []string, workerPort, rank int) []string {
	world := 1 + len(workerAddrs)
	env := []string{
		MasterPort + "=" + strconv.Itoa(masterPort),
		MasterAddr + "=" + masterAddr,
		WorldSize + "=" + strconv.Itoa(world),
		Rank + "=" + strconv.Itoa(rank),
		PythonUnbuffered + "=1",
	}
	// The operator sets these for LightGBM and only when there is more than one replica.
	if world > 1 {
		env = append(env,
			WorkerPort+"="+strconv.Itoa(workerPort),
			WorkerAddrs+"="+strings.Join(workerAddrs, ","))
	}
	return env
}

// ReplicaEnv is base without any of Keys, followed by OperatorEnv's variables, as a pod sees the
// container env with the operator's entries appended. Dropping the inherited keys means a
// replica never sees a stale value (say, when the launcher itself runs inside a training pod)
// next to the ones the operator sets.
func ReplicaEnv(base []string, masterAddr string, masterPort int, workerAddrs []string, workerPort, rank int) []string {
	env := make([]string, 0, len(base)+7)
	for _, kv := range base {
		key, _, _ := strings.Cut(kv, "=")
		if !IsKey(key) {
			env = append(env, kv)
		}
	}
	return append(env, OperatorEnv(masterAddr, masterPort, workerAddrs, workerPort, rank)...)
}

// Cluster is where a process sits in a training gang, read from the environment the job
// controller injects.
type Cluster struct {
	Rank        int
	WorldSize   int
	TrackerHost string // host every rank dials for the rendezvous tracker
	TrackerPort int    // port rank 0's tracker listens on (all interfaces)
	Source      string // which controller's contract the values came from
}

// Distributed reports whether more than one process trains together.
func (c Cluster) Distributed() bool { return c.WorldSize > 1 }

// Contracts recognised by Read.
const (
	SourceSingle           = "single process"
	SourceTrainingOperator = "Training Operator v1 (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK)"
	SourceTrainerV2        = "Kubeflow Trainer v2 (DMLC_TRACKER_URI, DMLC_TRACKER_PORT, DMLC_TASK_ID, DMLC_NUM_WORKER)"
)

// Read reads the Training Operator v1 contract (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK;
// Master is rank 0, Workers 1..N) or Kubeflow Trainer v2's XGBoost runtime contract
// (DMLC_TRACKER_URI, DMLC_TRACKER_PORT, DMLC_TASK_ID, DMLC_NUM_WORKER). With neither, it is a
// single process. In both contracts rank 0 runs the tracker.
func Read(getenv func(string) string) (Cluster, error) {
	num := func(key string, def int) (int, error) {
		v := getenv(key)
		if v == "" {
			return def, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("environment %s=%q: want a non-negative integer", key, v)
		}
		return n, nil
	}
	var c Cluster
	var err error
	switch {
	case getenv(TrackerURI) != "":
		c.Source = SourceTrainerV2
		c.TrackerHost = getenv(TrackerURI)
		if c.TrackerPort, err = num(TrackerPort, DefaultPort); err != nil {
			return c, err
		}
		if c.Rank, err = num(TaskID, 0); err != nil {
			return c, err
		}
		if c.WorldSize, err = num(NumWorker, 1); err != nil {
			return c, err
		}
	case getenv(MasterAddr) != "" || getenv(WorldSize) != "":
		c.Source = SourceTrainingOperator
		c.TrackerHost = getenv(MasterAddr)
		if c.TrackerPort, err = num(MasterPort, DefaultPort); err != nil {
			return c, err
		}
		if c.Rank, err = num(Rank, 0); err != nil {
			return c, err
		}
		if c.WorldSize, err = num(WorldSize, 1); err != nil {
			return c, err
		}
		if c.TrackerHost == "" && c.WorldSize > 1 {
			return c, fmt.Errorf("environment %s=%d but %s is empty", WorldSize, c.WorldSize, MasterAddr)
		}
	default:
		return Cluster{Rank: 0, WorldSize: 1, Source: SourceSingle}, nil
	}
	if c.WorldSize < 1 {
		return c, fmt.Errorf("world size %d: want at least 1 (%s)", c.WorldSize, c.Source)
	}
	if c.Rank >= c.WorldSize {
		return c, fmt.Errorf("rank %d is outside world size %d (%s)", c.Rank, c.WorldSize, c.Source)
	}
	return c, nil
}

// Lookup turns an env list (KEY=VALUE, the last entry of a key winning, as for exec) into a
// getenv function for Read.
func Lookup(env []string) func(string) string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return func(k string) string { return m[k] }
}
