package forest

// haveRow: the row kernel's walks are written for amd64 (kernel_row_amd64.s): in Go,
// eight walks and their temporaries already spill registers.
const haveRow = true

// rowSum is in kernel_row_amd64.s: acc plus the leaf values of every tree of
// ngroups groups, in tree order.
//
//go:noescape
func rowSum(words *uint32, groups *rowGroup, ngroups int, keys *uint32, acc float32) float32

// rowKeys1 is in kernel_row_amd64.s (AVX-512F: only where haveWide): rowKeys of one
// row for one lane.
//
//go:noescape
func rowKeys1(row *float32, nf int, keys *uint32)
