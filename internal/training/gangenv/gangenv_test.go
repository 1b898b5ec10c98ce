package gangenv

import (
	"slices"
	"strings"
	"testing"
)

func TestOperatorEnvClusterNames(t *testing.T) {
	got := OperatorEnv("iris-master-0", DefaultPort, []string{"iris-worker-0", "iris-worker-1"}, DefaultPort, 2)
	want := []string{"MASTER_PORT=9999", "MASTER_ADDR=iris-master-0", "WORLD_SIZE=3", "RANK=2", "PYTHONUNBUFFERED=1",
		"WORKER_PORT=9999", "WORKER_ADDRS=iris-worker-0,iris-worker-1"}
	if !slices.Equal(got, want) {
		t.Errorf("OperatorEnv = %q\nwant %q", got, want)
	}
	if got := OperatorEnv("solo-master-0", 9999, nil, 9999, 0); len(got) != 5 {
		t.Errorf("a master-only job gets no WORKER_* variables: %q", got)
	}
}

func TestReplicaEnvDropsInheritedKeys(t *testing.T) {
	base := []string{"PATH=/bin", "RANK=7", "DMLC_TRACKER_URI=stale", "MASTER_ADDR=stale", "KEEP=1"}
	got := ReplicaEnv(base, "127.0.0.1", 4000, []string{"127.0.0.1"}, 4001, 1)
	want := []string{"PATH=/bin", "KEEP=1", "MASTER_PORT=4000", "MASTER_ADDR=127.0.0.1", "WORLD_SIZE=2", "RANK=1",
		"PYTHONUNBUFFERED=1", "WORKER_PORT=4001", "WORKER_ADDRS=127.0.0.1"}
	if !slices.Equal(got, want) {
		t.Errorf("ReplicaEnv =\n%q\nwant\n%q", got, want)
	}
}

// What the writer writes, the reader reads back, for every rank of gangs of several sizes.
func TestRoundTrip(t *testing.T) {
	cases := []struct {
		name    string
		master  string
		port    int
		workers []string
	}{
		{"master alone", "solo-master-0", DefaultPort, nil},
		{"one worker", "iris-master-0", DefaultPort, []string{"iris-worker-0"}},
		{"loopback three workers", "127.0.0.1", 41234, []string{"127.0.0.1", "127.0.0.1", "127.0.0.1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			world := 1 + len(c.workers)
			for rank := range world {
				env := ReplicaEnv([]string{"DMLC_TRACKER_URI=stale"}, c.master, c.port, c.workers, c.port+2, rank)
				got, err := Read(Lookup(env))
				if err != nil {
					t.Fatalf("rank %d: %v", rank, err)
				}
				want := Cluster{Rank: rank, WorldSize: world, TrackerHost: c.master, TrackerPort: c.port, Source: SourceTrainingOperator}
				if got != want {
					t.Errorf("rank %d: read %+v, want %+v", rank, got, want)
				}
				if got.Distributed() != (world > 1) {
					t.Errorf("rank %d: Distributed() = %v with world %d", rank, got.Distributed(), world)
				}
			}
		})
	}
}

func TestRead(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		want    Cluster
		wantErr string
	}{
		{name: "no env", env: nil, want: Cluster{WorldSize: 1, Source: SourceSingle}},
		{name: "training operator master", env: map[string]string{"MASTER_ADDR": "job-master-0", "MASTER_PORT": "9999", "WORLD_SIZE": "3", "RANK": "0"},
			want: Cluster{Rank: 0, WorldSize: 3, TrackerHost: "job-master-0", TrackerPort: 9999, Source: SourceTrainingOperator}},
		{name: "training operator worker default port", env: map[string]string{"MASTER_ADDR": "job-master-0", "WORLD_SIZE": "3", "RANK": "2"},
			want: Cluster{Rank: 2, WorldSize: 3, TrackerHost: "job-master-0", TrackerPort: 9999, Source: SourceTrainingOperator}},
		{name: "trainer v2", env: map[string]string{"DMLC_TRACKER_URI": "job-node-0-0.job", "DMLC_TRACKER_PORT": "9091", "DMLC_TASK_ID": "1", "DMLC_NUM_WORKER": "2"},
			want: Cluster{Rank: 1, WorldSize: 2, TrackerHost: "job-node-0-0.job", TrackerPort: 9091, Source: SourceTrainerV2}},
		{name: "trainer v2 wins over operator", env: map[string]string{"DMLC_TRACKER_URI": "t", "MASTER_ADDR": "m", "WORLD_SIZE": "5"},
			want: Cluster{Rank: 0, WorldSize: 1, TrackerHost: "t", TrackerPort: DefaultPort, Source: SourceTrainerV2}},
		{name: "rank outside world", env: map[string]string{"MASTER_ADDR": "m", "WORLD_SIZE": "2", "RANK": "2"}, wantErr: "rank 2 is outside world size 2"},
		{name: "bad number", env: map[string]string{"MASTER_ADDR": "m", "WORLD_SIZE": "two"}, wantErr: `WORLD_SIZE="two"`},
		{name: "negative rank", env: map[string]string{"MASTER_ADDR": "m", "RANK": "-1"}, wantErr: `RANK="-1": want a non-negative integer`},
		{name: "bad v2 port", env: map[string]string{"DMLC_TRACKER_URI": "h", "DMLC_TRACKER_PORT": "x"}, wantErr: `DMLC_TRACKER_PORT="x"`},
		{name: "world without master", env: map[string]string{"WORLD_SIZE": "2", "RANK": "1"}, wantErr: "WORLD_SIZE=2 but MASTER_ADDR is empty"},
		{name: "zero world", env: map[string]string{"DMLC_TRACKER_URI": "h", "DMLC_NUM_WORKER": "0"}, wantErr: "world size 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Read(func(k string) string { return c.env[k] })
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}
