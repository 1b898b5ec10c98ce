//go:build !amd64

package forest

const haveRow = false

func rowSum(words *uint32, groups *rowGroup, ngroups int, keys *uint32, acc float32) float32 {
	panic("forest: rowSum without amd64")
}

func rowKeys1(row *float32, nf int, keys *uint32) {
	panic("forest: rowKeys1 without amd64")
}
