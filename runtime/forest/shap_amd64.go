package forest

// shapLeaves8 is in shap_amd64.s (AVX-512F: only where haveWide): the leaf loop of
// addScaledLeaves for nleaves leaves of at most eight path features each.
//
//go:noescape
func shapLeaves8(phi *float64, leaves *pathLeaf, nleaves int, cold *uint32, table *float32, coef *float64, feats *int32)
