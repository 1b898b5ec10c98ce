package train

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gangboost/gangboost/internal/training/dataset"
	"github.com/gangboost/gangboost/internal/training/xgb"
)

// schema is what every rank must agree on before boosting. libxgboost's collective calls assume
// the same shapes on every rank: when ranks differ (say, in num_class, which sizes the gradient
// vectors every round reduces), libxgboost 1.7 blocks for ever in an allreduce while the
// heartbeats go on, so the gang watch never fires. Ranks differ when they read different data
// (each pod mounts another file, a file changed while the gang started) or different settings.
type schema struct {
	Features     int      `json:"features"`
	FeatureNames []string `json:"feature_names"`
	Label        string   `json:"label"`
	Classes      []string `json:"classes"` // in label-index order: the label mapping
	// Categories are the names of text feature columns in code order: the feature mapping.
	Categories [][]string        `json:"categories,omitempty"`
	NumClass   int               `json:"num_class"`
	Eval       bool              `json:"eval"` // whether the rank evaluates on a second set
	Params     map[string]string `json:"params"`
}

func newSchema(params Params, trainM, evalM *dataset.Matrix) schema {
	p := params.Map()
	// Threads per rank may differ between machines without changing the model.
	delete(p, "nthread")
	return schema{Features: trainM.Cols, FeatureNames: trainM.FeatureNames, Label: trainM.LabelName,
		Classes: trainM.Classes, Categories: trainM.Categories, NumClass: params.NumClass, Eval: evalM != nil, Params: p}
}

// collective is the part of libxgboost's collective agree uses.
type collective interface {
	allreduceSum(v []float64) error
	broadcast(buf []byte, root int) error
}

// xgbCollective is libxgboost's collective; its calls must come from boost's locked OS thread.
type xgbCollective struct{}

func (xgbCollective) allreduceSum(v []float64) error       { return xgb.AllreduceSumFloat64(v) }
func (xgbCollective) broadcast(buf []byte, root int) error { return xgb.Broadcast(buf, root) }

// rankFacts is what one rank tells the others: its schema's digest and length, and its row counts.
type rankFacts struct {
	digest    [8]uint32 // sha256 of the schema's JSON
	schemaLen int
	trainRows int
	evalRows  int
}

const factsLen = 8 + 3 // float64 slots per rank

// agree checks, on every rank alike, that all ranks hold the same schema and rows to train and
// evaluate on; each rank gets the same error naming the first rank that differs from rank 0 and
// how. The common case costs one small allreduce; the schemas themselves travel only when they
// differ.
func agree(c collective, rank, world int, local schema, trainRows, evalRows int, evalFraction float64) error {
	js, err := json.Marshal(local)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(js)
	// Every value fits a float64 exactly: 32-bit digest words and counts below 2^53.
	all := make([]float64, world*factsLen)
	mine := all[rank*factsLen : (rank+1)*factsLen]
	for i := range 8 {
		mine[i] = float64(binary.BigEndian.Uint32(sum[4*i:]))
	}
	mine[8], mine[9], mine[10] = float64(len(js)), float64(trainRows), float64(evalRows)
	if world > 1 {
		if err := c.allreduceSum(all); err != nil {
			return fmt.Errorf("compare the ranks' data: %w", err)
		}
	}
	facts := make([]rankFacts, world)
	for r := range facts {
		v := all[r*factsLen : (r+1)*factsLen]
		for i := range 8 {
			facts[r].digest[i] = uint32(v[i])
		}
		facts[r].schemaLen, facts[r].trainRows, facts[r].evalRows = int(v[8]), int(v[9]), int(v[10])
	}

	if differs := slices.IndexFunc(facts, func(f rankFacts) bool { return f.digest != facts[0].digest }); differs > 0 {
		// Every rank saw the same facts, so every rank takes part in the same two broadcasts.
		schemas := [2]schema{}
		for k, root := range []int{0, differs} {
			buf := make([]byte, facts[root].schemaLen)
			if rank == root {
				copy(buf, js)
			}
			if err := c.broadcast(buf, root); err != nil {
				return fmt.Errorf("compare the ranks' data: %w", err)
			}
			if err := json.Unmarshal(buf, &schemas[k]); err != nil {
				return fmt.Errorf("compare the ranks' data: schema from rank %d: %w", root, err)
			}
		}
		return &gangError{fmt.Errorf("the ranks disagree: %s; every rank must read the same data with the same settings",
			schemaDifference(schemas[1], differs, schemas[0], 0))}
	}

	for r, f := range facts {
		switch {
		case evalFraction <= 0:
			// Without a split, every rank's rows were checked while loading.
		case f.trainRows == 0:
			return &gangError{fmt.Errorf("--eval-fraction %g leaves rank %d with 0 training rows (and %d evaluation rows): use a smaller fraction, or fewer ranks",
				evalFraction, r, f.evalRows)}
		case f.evalRows == 0:
			return &gangError{fmt.Errorf("--eval-fraction %g leaves rank %d with 0 evaluation rows (and %d training rows): use a larger fraction, or fewer ranks",
				evalFraction, r, f.trainRows)}
		}
	}
	return nil
}

// gangError is a failure every rank of the gang reaches at the same point with the same message,
// so the ranks can finish together instead of each taking another's exit for a lost rank.
type gangError struct{ err error }

func (e *gangError) Error() string { return e.err.Error() }
func (e *gangError) Unwrap() error { return e.err }

// schemaDifference says how rank a's schema differs from rank b's, e.g.
// "rank 1 has classes [a b c], rank 0 has [a b]".
func schemaDifference(a schema, ra int, b schema, rb int) string {
	var diffs []string
	add := func(what string, va, vb any) {
		diffs = append(diffs, fmt.Sprintf("rank %d has %s %v, rank %d has %v", ra, what, va, rb, vb))
	}
	if a.Features != b.Features {
		add("features count", a.Features, b.Features)
	} else if !slices.Equal(a.FeatureNames, b.FeatureNames) {
		add("feature names", clipList(a.FeatureNames), clipList(b.FeatureNames))
	}
	if a.Label != b.Label {
		add("label", fmt.Sprintf("%q", a.Label), fmt.Sprintf("%q", b.Label))
	}
	if !slices.Equal(a.Classes, b.Classes) {
		add("classes", clipList(a.Classes), clipList(b.Classes))
	}
	if a.NumClass != b.NumClass {
		add("num_class", a.NumClass, b.NumClass)
	}
	if a.Eval != b.Eval {
		add("an evaluation set:", a.Eval, b.Eval)
	}
	if !maps.Equal(a.Params, b.Params) {
		for _, k := range slices.Sorted(maps.Keys(mergeKeys(a.Params, b.Params))) {
			if a.Params[k] != b.Params[k] && k != "num_class" { // named above
				add("parameter "+k, fmt.Sprintf("%q", a.Params[k]), fmt.Sprintf("%q", b.Params[k]))
			}
		}
	}
	if len(diffs) == 0 {
		return fmt.Sprintf("rank %d's data schema differs from rank %d's", ra, rb)
	}
	return strings.Join(diffs, "; ")
}

func mergeKeys(a, b map[string]string) map[string]bool {
	m := make(map[string]bool, len(a)+len(b))
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return m
}

// clipList prints a list as [a b c], cut short after 20 entries.
func clipList(l []string) string {
	if len(l) <= 20 {
		return fmt.Sprint(l)
	}
	return fmt.Sprintf("%v... (%d in all)", l[:20], len(l))
}
