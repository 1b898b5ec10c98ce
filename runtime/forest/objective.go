package forest

import (
	"fmt"
	"math"
)

type objKind uint8

const (
	kindRegression objKind = iota
	kindBinary             // two classes from one margin
	kindMulti              // one margin per class
	kindRank
)

type transform uint8

const (
	tIdentity transform = iota
	tSigmoid
	tExp
	tHinge    // 1 if margin > 0 else 0
	tSoftprob // softmax over the groups
	tArgmax   // index of the largest margin (multi:softmax)
)

type marginFn uint8

const (
	mIdentity marginFn = iota
	mLogit             // -log(1/p - 1), base_score must lie in (0, 1)
	mLog               // log(p), base_score must be > 0
)

type objective struct {
	kind      objKind
	transform transform
	margin    marginFn
}

// objectives maps XGBoost objective names to how predictions leave the margin space
// (ObjFunction::PredTransform) and how base_score enters it (ObjFunction::ProbToMargin),
// as in src/objective/{regression_obj,multiclass_obj,rank_obj,hinge}.cc.
var objectives = map[string]objective{
	"reg:squarederror":     {kindRegression, tIdentity, mIdentity},
	"reg:linear":           {kindRegression, tIdentity, mIdentity}, // pre-1.0 name of squarederror
	"reg:squaredlogerror":  {kindRegression, tIdentity, mIdentity},
	"reg:pseudohubererror": {kindRegression, tIdentity, mIdentity},
	"reg:absoluteerror":    {kindRegression, tIdentity, mIdentity},
	"reg:quantileerror":    {kindRegression, tIdentity, mIdentity},
	"reg:logistic":         {kindRegression, tSigmoid, mLogit},
	"binary:logistic":      {kindBinary, tSigmoid, mLogit},
	// base_score enters binary:logitraw as is since XGBoost 1.4 (dmlc/xgboost#6517);
	// build switches to a logit for files written by older versions.
	"binary:logitraw": {kindBinary, tIdentity, mIdentity},
	"binary:hinge":    {kindBinary, tHinge, mIdentity},
	"count:poisson":   {kindRegression, tExp, mLog},
	"reg:gamma":       {kindRegression, tExp, mLog},
	"reg:tweedie":     {kindRegression, tExp, mLog},
	"survival:cox":    {kindRegression, tExp, mLog},
	// AFTObj: PredTransform exp, ProbToMargin log (src/objective/aft_obj.cc).
	"survival:aft":   {kindRegression, tExp, mLog},
	"multi:softmax":  {kindMulti, tArgmax, mIdentity},
	"multi:softprob": {kindMulti, tSoftprob, mIdentity},
	"rank:pairwise":  {kindRank, tIdentity, mIdentity},
	"rank:ndcg":      {kindRank, tIdentity, mIdentity},
	"rank:map":       {kindRank, tIdentity, mIdentity},
}

// probToMargin converts base_score to the margin the trees add to, in float32 like
// XGBoost (logf/expf on float).
func (o objective) probToMargin(name string, p float32) (float32, error) {
	switch o.margin {
	case mLogit:
		if !(p > 0 && p < 1) {
			return 0, fmt.Errorf("base_score %v out of range (0, 1) for objective %s", p, name)
		}
		return -logf(1/p - 1), nil
	case mLog:
		if !(p > 0) {
			return 0, fmt.Errorf("base_score %v must be positive for objective %s", p, name)
		}
		return logf(p), nil
	}
	return p, nil
}

func logf(x float32) float32 { return float32(math.Log(float64(x))) }
func expf(x float32) float32 { return float32(math.Exp(float64(x))) }

// sigmoid matches XGBoost's common::Sigmoid(float).
func sigmoid(x float32) float32 {
	return 1 / (1 + expf(-x))
}

// softmaxInPlace matches common::Softmax: max-shifted expf in float, summed in double.
func softmaxInPlace(v []float32) {
	wmax := v[0]
	for _, x := range v[1:] {
		if x > wmax {
			wmax = x
		}
	}
	var sum float64
	for i, x := range v {
		// The largest class's is exp(0), 1 exactly: one exponential fewer a row.
		e := float32(1)
		if d := x - wmax; d != 0 {
			e = expf(d)
		}
		v[i] = e
		sum += float64(e)
	}
	s := float32(sum)
	for i := range v {
		v[i] /= s
	}
}

// argmax returns the first index of the largest value, as XGBoost's FindMaxIndex.
func argmax(v []float32) int {
	best := 0
	for i := 1; i < len(v); i++ {
		if v[i] > v[best] {
			best = i
		}
	}
	return best
}
