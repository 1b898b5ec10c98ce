//go:build !amd64

package forest

const haveWide = false

func wideWalk(tables *uint32, trees *wideTree, ntrees int, keys *uint32, keyStride int, acc *float32) {
	panic("forest: wideWalk without AVX-512")
}

func wideKeys(rows *float32, nrows int, nf int, keys *uint32, keyStride int) {
	panic("forest: wideKeys without AVX-512")
}
