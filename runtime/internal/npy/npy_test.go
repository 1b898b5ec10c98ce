package npy

import (
	"encoding/binary"
	"math"
	"testing"
)

func npyFile(header string, body []byte) []byte {
	for (10+len(header)+1)%64 != 0 {
		header += " "
	}
	header += "\n"
	out := []byte("\x93NUMPY\x01\x00")
	out = binary.LittleEndian.AppendUint16(out, uint16(len(header)))
	out = append(out, header...)
	return append(out, body...)
}

func TestParseNpy(t *testing.T) {
	var f32 []byte
	for _, v := range []float32{1.5, float32(math.NaN()), -2, 0, 3, 4} {
		f32 = binary.LittleEndian.AppendUint32(f32, math.Float32bits(v))
	}
	a, err := parseNpy(npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", f32))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Shape) != 2 || a.Shape[0] != 2 || a.Shape[1] != 3 || a.Data[0] != 1.5 || !math.IsNaN(a.Data[1]) || a.Data[2] != -2 {
		t.Fatalf("got %+v", a)
	}
	var i32 []byte
	for _, v := range []int32{7, -1} {
		i32 = binary.LittleEndian.AppendUint32(i32, uint32(v))
	}
	a, err = parseNpy(npyFile("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", i32))
	if err != nil || a.Data[0] != 7 || a.Data[1] != -1 {
		t.Fatalf("int32: %+v, %v", a, err)
	}
	if _, err := parseNpy(npyFile("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", f32[:4])); err == nil {
		t.Fatal("big-endian accepted")
	}
	if _, err := parseNpy(npyFile("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", f32[:4])); err == nil {
		t.Fatal("short body accepted")
	}
}
