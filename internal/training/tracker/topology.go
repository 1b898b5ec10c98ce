package tracker

import "slices"

// topology is the link map every worker receives: a binary tree for
// tree allreduce and broadcast, and a ring for ring allreduce (used for
// arrays above rabit_reduce_ring_mincount, 32K items by default).
type topology struct {
	tree   [][]int  // tree[r]: tree neighbours of r, parent first
	parent []int    // parent[r]: tree parent, -1 for the root (rank 0)
	ring   [][2]int // ring[r]: {prev, next}
}

func (t topology) worldSize() int { return len(t.parent) }

// neighbours returns every rank r must be linked to: tree neighbours plus
// ring prev and next, without r itself, ascending.
func (t topology) neighbours(r int) []int {
	set := slices.Clone(t.tree[r])
	for _, p := range t.ring[r] {
		if p != r {
			set = append(set, p)
		}
	}
	slices.Sort(set)
	return slices.Compact(set)
}

// newTopology builds the link map the way xgboost 1.7's tracker.py
// (RabitTracker.get_link_map) does:
//
//		https://github.com/dmlc/xgboost/blob/v1.7.4/python-package/xgboost/tracker.py
//
//	 1. a heap-shaped binary tree over 0..n-1 (parent of r is (r+1)/2-1);
//	 2. a ring that walks the tree depth first, reversing the last child's
//	    subtree, so that most ring links are also tree links;
//	 3. ranks relabelled in ring order, so the ring becomes 0,1,...,n-1.
//
// Step 3 is not cosmetic: libxgboost's ring allreduce asserts that its ring
// next is (rank+1)%n and its ring prev is (rank-1)%n ("need to assume rank
// structure" in TryReduceScatterRing / TryAllgatherRing).
func newTopology(n int) topology {
	heapTree := make([][]int, n)
	heapParent := make([]int, n)
	for r := range n {
		heapParent[r] = (r+1)/2 - 1
		if r > 0 {
			heapTree[r] = append(heapTree[r], heapParent[r])
		}
		for _, c := range []int{2*r + 1, 2*r + 2} {
			if c < n {
				heapTree[r] = append(heapTree[r], c)
			}
		}
	}

	// order is the ring in heap labels, starting at the root.
	var walk func(r int) []int
	walk = func(r int) []int {
		out := []int{r}
		var children []int
		for _, c := range heapTree[r] {
			if c != heapParent[r] {
				children = append(children, c)
			}
		}
		// tracker.py iterates the children as a Python set. CPython stores
		// a small set of small ints in an 8-slot table at slot value&7, so
		// children 2r+1, 2r+2 come out ordered by value mod 8 (15 after 16).
		// Visiting them in that order keeps the map identical to tracker.py's.
		slices.SortFunc(children, func(a, b int) int { return a&7 - b&7 })
		for i, c := range children {
			sub := walk(c)
			if i == len(children)-1 {
				slices.Reverse(sub)
			}
			out = append(out, sub...)
		}
		return out
	}
	order := walk(0)

	relabel := make([]int, n) // heap label -> rank
	for i, r := range order {
		relabel[r] = i
	}
	t := topology{
		tree:   make([][]int, n),
		parent: make([]int, n),
		ring:   make([][2]int, n),
	}
	for h := range n {
		r := relabel[h]
		t.parent[r] = -1
		if heapParent[h] >= 0 {
			t.parent[r] = relabel[heapParent[h]]
		}
		for _, nb := range heapTree[h] {
			t.tree[r] = append(t.tree[r], relabel[nb])
		}
	}
	for r := range n {
		t.ring[r] = [2]int{(r + n - 1) % n, (r + 1) % n}
	}
	return t
}
