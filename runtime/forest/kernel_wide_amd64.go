package forest

import "golang.org/x/sys/cpu"

// haveWide: the CPU (and the OS, which must save the 512-bit registers) has AVX-512F,
// which wideWalk needs.
var haveWide = cpu.X86.HasAVX512F

// wideWalk is in kernel_wide_amd64.s.
//
//go:noescape
func wideWalk(tables *uint32, trees *wideTree, ntrees int, keys *uint32, keyStride int, acc *float32)

// wideKeys is in kernel_wide_amd64.s.
//
//go:noescape
func wideKeys(rows *float32, nrows int, nf int, keys *uint32, keyStride int)
