package train

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/gangboost/gangboost/internal/training/dataset"
)

// fakeCollective runs the collective calls of world goroutines in lock step, as libxgboost's
// collective does for world processes: the k-th call of every rank meets the k-th call of the
// others. A rank calling something else than the others makes the test fail.
type fakeCollective struct {
	world int
	mu    sync.Mutex
	cond  *sync.Cond
	calls map[int]*fakeCall // by sequence number
}

type fakeCall struct {
	kind    string
	root    int
	in      map[int][]float64
	bytes   map[int][]byte
	arrived int
	done    bool
	sum     []float64
	payload []byte
	err     error
}

func newFakeCollective(world int) *fakeCollective {
	f := &fakeCollective{world: world, calls: map[int]*fakeCall{}}
	f.cond = sync.NewCond(&f.mu)
	return f
}

// rank is one rank's handle: it counts that rank's calls.
type fakeRank struct {
	f    *fakeCollective
	rank int
	seq  int
}

func (r *fakeRank) meet(kind string, root int, v []float64, b []byte) *fakeCall {
	f := r.f
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.calls[r.seq]
	if c == nil {
		c = &fakeCall{kind: kind, root: root, in: map[int][]float64{}, bytes: map[int][]byte{}}
		f.calls[r.seq] = c
	}
	r.seq++
	if c.kind != kind || c.root != root {
		c.err = fmt.Errorf("rank %d calls %s(root %d) where another rank calls %s(root %d)", r.rank, kind, root, c.kind, c.root)
	}
	c.in[r.rank], c.bytes[r.rank] = append([]float64(nil), v...), append([]byte(nil), b...)
	c.arrived++
	if c.arrived == f.world {
		c.sum = make([]float64, len(v))
		for _, in := range c.in {
			if len(in) != len(v) {
				c.err = fmt.Errorf("allreduce of different lengths")
			}
			for i := range min(len(in), len(v)) {
				c.sum[i] += in[i]
			}
		}
		c.payload = c.bytes[root]
		c.done = true
		f.cond.Broadcast()
	}
	for !c.done {
		f.cond.Wait()
	}
	return c
}

func (r *fakeRank) allreduceSum(v []float64) error {
	c := r.meet("allreduce", -1, v, nil)
	copy(v, c.sum)
	return c.err
}

func (r *fakeRank) broadcast(buf []byte, root int) error {
	c := r.meet("broadcast", root, nil, buf)
	if len(c.payload) != len(buf) {
		return fmt.Errorf("broadcast of %d bytes into %d", len(c.payload), len(buf))
	}
	copy(buf, c.payload)
	return c.err
}

func TestAgree(t *testing.T) {
	base := func() schema {
		return newSchema(Params{Objective: "multi:softprob", NumRound: 10, NumClass: 2, NThread: 1},
			&dataset.Matrix{Cols: 2, FeatureNames: []string{"a", "b"}, LabelName: "y", Classes: []string{"a", "b"}}, nil)
	}
	type rankInput struct {
		schema      schema
		train, eval int
	}
	same := func(world int) []rankInput {
		in := make([]rankInput, world)
		for r := range in {
			in[r] = rankInput{base(), 10, 0}
		}
		return in
	}
	cases := []struct {
		name     string
		world    int
		edit     func(in []rankInput)
		fraction float64
		want     string // "" for agreement
	}{
		{name: "one rank", world: 1},
		{name: "three ranks agree", world: 3},
		{name: "other classes", world: 2, edit: func(in []rankInput) {
			in[1].schema.Classes = []string{"a", "b", "c"}
			in[1].schema.NumClass = 3
		}, want: "the ranks disagree: rank 1 has classes [a b c], rank 0 has [a b]; rank 1 has num_class 3, rank 0 has 2"},
		{name: "the last of four ranks differs", world: 4, edit: func(in []rankInput) {
			in[3].schema.FeatureNames = []string{"a", "c"}
		}, want: "the ranks disagree: rank 3 has feature names [a c], rank 0 has [a b]"},
		{name: "feature count", world: 2, edit: func(in []rankInput) {
			in[1].schema.Features, in[1].schema.FeatureNames = 3, []string{"a", "b", "c"}
		}, want: "rank 1 has features count 3, rank 0 has 2"},
		{name: "parameters", world: 2, edit: func(in []rankInput) {
			in[1].schema.Params = newSchema(Params{Objective: "multi:softmax", NumRound: 10, NumClass: 2}, &dataset.Matrix{}, nil).Params
		}, want: `rank 1 has parameter objective "multi:softmax", rank 0 has "multi:softprob"`},
		{name: "threads may differ", world: 2, edit: func(in []rankInput) {
			in[1].schema = newSchema(Params{Objective: "multi:softprob", NumRound: 10, NumClass: 2, NThread: 8},
				&dataset.Matrix{Cols: 2, FeatureNames: []string{"a", "b"}, LabelName: "y", Classes: []string{"a", "b"}}, nil)
		}},
		{name: "no evaluation rows on a rank", world: 3, fraction: 0.2, edit: func(in []rankInput) {
			in[0].eval, in[1].eval, in[2].eval = 2, 0, 2
		}, want: "--eval-fraction 0.2 leaves rank 1 with 0 evaluation rows (and 10 training rows)"},
		{name: "no training rows on a rank", world: 2, fraction: 0.9, edit: func(in []rankInput) {
			in[0].eval, in[1].train, in[1].eval = 9, 0, 1
		}, want: "--eval-fraction 0.9 leaves rank 1 with 0 training rows (and 1 evaluation rows)"},
		{name: "one process without evaluation rows", world: 1, fraction: 0.01,
			want: "--eval-fraction 0.01 leaves rank 0 with 0 evaluation rows (and 10 training rows)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := same(c.world)
			if c.edit != nil {
				c.edit(in)
			}
			for r := range in {
				in[r].schema.Eval = c.fraction > 0
			}
			f := newFakeCollective(c.world)
			errs := make([]error, c.world)
			var wg sync.WaitGroup
			for r := range c.world {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[r] = agree(&fakeRank{f: f, rank: r}, r, c.world, in[r].schema, in[r].train, in[r].eval, c.fraction)
				}()
			}
			wg.Wait()
			for r, err := range errs {
				if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
					t.Fatalf("rank %d: %v\nwant %q", r, err, c.want)
				}
				if err != nil && err.Error() != errs[0].Error() {
					t.Fatalf("ranks got different errors:\n%v\n%v", errs[0], err)
				}
			}
		})
	}
}
