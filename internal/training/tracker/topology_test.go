package tracker

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// checkTopology verifies the invariants libxgboost relies on.
func checkTopology(t *testing.T, topo topology) {
	t.Helper()
	n := topo.worldSize()
	if topo.parent[0] != -1 {
		t.Errorf("n=%d: parent of rank 0 = %d, want -1", n, topo.parent[0])
	}
	for r := range n {
		for _, nb := range topo.tree[r] {
			if nb < 0 || nb >= n || nb == r {
				t.Fatalf("n=%d: rank %d has tree neighbour %d", n, r, nb)
			}
			if !slices.Contains(topo.tree[nb], r) {
				t.Errorf("n=%d: tree link %d->%d not symmetric (%d has %v)", n, r, nb, nb, topo.tree[nb])
			}
		}
		if p := topo.parent[r]; r > 0 {
			if !slices.Contains(topo.tree[r], p) {
				t.Errorf("n=%d: parent %d of rank %d not among its tree neighbours %v", n, p, r, topo.tree[r])
			}
			if topo.parent[p] == r {
				t.Errorf("n=%d: ranks %d and %d are each other's parent", n, r, p)
			}
		}
		// libxgboost asserts next == (rank+1)%n and prev == (rank-1)%n.
		if got, want := topo.ring[r], [2]int{(r + n - 1) % n, (r + 1) % n}; got != want {
			t.Errorf("n=%d: ring of rank %d = %v, want %v", n, r, got, want)
		}
	}
	// Every rank reaches the root through parents: the tree is one tree.
	for r := range n {
		seen := 0
		for x := r; x != 0; x = topo.parent[x] {
			if seen++; seen > n {
				t.Fatalf("n=%d: parent chain from %d loops", n, r)
			}
		}
	}
}

func TestTopologyInvariants(t *testing.T) {
	for n := 1; n <= 100; n++ {
		checkTopology(t, newTopology(n))
	}
}

// TestTopologyMatchesPythonTracker compares with the link maps xgboost
// 1.7.4's tracker.py computes; testdata/linkmap_tracker_py.json was written by
//
//	t = xgboost.tracker.RabitTracker("127.0.0.1", 1)
//	tree, parent, ring = t.get_link_map(n)   # n = 1..32, tree lists sorted
func TestTopologyMatchesPythonTracker(t *testing.T) {
	raw, err := os.ReadFile("testdata/linkmap_tracker_py.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden []struct {
		WorldSize int      `json:"world_size"`
		Tree      [][]int  `json:"tree"`
		Parent    []int    `json:"parent"`
		Ring      [][2]int `json:"ring"`
	}
	if err := json.Unmarshal(raw, &golden); err != nil {
		t.Fatalf("testdata/linkmap_tracker_py.json: %v", err)
	}
	for _, g := range golden {
		topo := newTopology(g.WorldSize)
		for r := range g.WorldSize {
			tree := slices.Sorted(slices.Values(topo.tree[r]))
			if !slices.Equal(tree, g.Tree[r]) && !(len(tree) == 0 && len(g.Tree[r]) == 0) {
				t.Errorf("n=%d rank %d: tree neighbours %v, tracker.py %v", g.WorldSize, r, tree, g.Tree[r])
			}
			if topo.parent[r] != g.Parent[r] {
				t.Errorf("n=%d rank %d: parent %d, tracker.py %d", g.WorldSize, r, topo.parent[r], g.Parent[r])
			}
			if topo.ring[r] != g.Ring[r] {
				t.Errorf("n=%d rank %d: ring %v, tracker.py %v", g.WorldSize, r, topo.ring[r], g.Ring[r])
			}
		}
	}
}

func TestNeighbours(t *testing.T) {
	tests := []struct {
		n, rank int
		want    []int
	}{
		{1, 0, nil},
		{2, 0, []int{1}},
		{2, 1, []int{0}},
		{3, 0, []int{1, 2}},
		{4, 0, []int{1, 3}},
		{4, 2, []int{1, 3}},
		{5, 1, []int{0, 2, 3}},
		{5, 4, []int{0, 3}},
	}
	for _, tt := range tests {
		got := newTopology(tt.n).neighbours(tt.rank)
		if !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
			t.Errorf("n=%d rank %d: neighbours %v, want %v", tt.n, tt.rank, got, tt.want)
		}
	}
}
