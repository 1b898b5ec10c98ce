package train

import (
	"fmt"
	"strconv"
)

// Cluster is where this process sits in a training gang, read from the environment the job
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

// Contracts recognised by ClusterFromEnv.
const (
	SourceSingle           = "single process"
	SourceTrainingOperator = "Training Operator v1 (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK)"
	SourceTrainerV2        = "Kubeflow Trainer v2 (DMLC_TRACKER_URI, DMLC_TRACKER_PORT, DMLC_TASK_ID, DMLC_NUM_WORKER)"
)

// defaultMasterPort is the XGBoostJob port (xgboostjob-port) the Training Operator v1 uses.
const defaultMasterPort = 9999

// ClusterFromEnv reads the Training Operator v1 contract (MASTER_ADDR, MASTER_PORT, WORLD_SIZE,
// RANK; Master is rank 0, Workers 1..N) or Kubeflow Trainer v2's XGBoost runtime contract
// (DMLC_TRACKER_URI, DMLC_TRACKER_PORT, DMLC_TASK_ID, DMLC_NUM_WORKER). With neither, it is a
// single process. In both contracts rank 0 runs the tracker.
func ClusterFromEnv(getenv func(string) string) (Cluster, error) {
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
	case getenv("DMLC_TRACKER_URI") != "":
		c.Source = SourceTrainerV2
		c.TrackerHost = getenv("DMLC_TRACKER_URI")
		if c.TrackerPort, err = num("DMLC_TRACKER_PORT", defaultMasterPort); err != nil {
			return c, err
		}
		if c.Rank, err = num("DMLC_TASK_ID", 0); err != nil {
			return c, err
		}
		if c.WorldSize, err = num("DMLC_NUM_WORKER", 1); err != nil {
			return c, err
		}
	case getenv("MASTER_ADDR") != "" || getenv("WORLD_SIZE") != "":
		c.Source = SourceTrainingOperator
		c.TrackerHost = getenv("MASTER_ADDR")
		if c.TrackerPort, err = num("MASTER_PORT", defaultMasterPort); err != nil {
			return c, err
		}
		if c.Rank, err = num("RANK", 0); err != nil {
			return c, err
		}
		if c.WorldSize, err = num("WORLD_SIZE", 1); err != nil {
			return c, err
		}
		if c.TrackerHost == "" && c.WorldSize > 1 {
			return c, fmt.Errorf("environment WORLD_SIZE=%d but MASTER_ADDR is empty", c.WorldSize)
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
