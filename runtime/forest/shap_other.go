//go:build !amd64

package forest

const haveShapWide = false

func shapLeaves8(phi *float64, leaves *pathLeaf, nleaves int, cold *uint32, table *float32, coef *float64, feats *int32) {
	panic("forest: shapLeaves8 without AVX-512")
}
