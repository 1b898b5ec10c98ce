package forest

import "golang.org/x/sys/cpu"

// haveShapWide: shapLeaves8 needs AVX-512F and BMI2 (BZHI).
var haveShapWide = cpu.X86.HasAVX512F && cpu.X86.HasBMI2

// shapLeaves8 is in shap_amd64.s (only where haveShapWide): the leaf loop of
// addScaledLeaves for nleaves leaves of at most eight path features each.
//
//go:noescape
func shapLeaves8(phi *float64, leaves *pathLeaf, nleaves int, cold *uint32, table *float32, coef *float64, feats *int32)
