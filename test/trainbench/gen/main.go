// Command gen writes the HIGGS-like data set test/trainbench/run.sh trains on: ROWS rows of 28
// standard normal features and a binary label, as CSV (for gangboost-train) and as raw float32
// rows, label first (for floor.c), with equal values.
//
//	go run ./test/trainbench/gen ROWS OUT.csv OUT.f32
package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"os"
	"strconv"
)

const features = 28

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: gen ROWS OUT.csv OUT.f32")
		os.Exit(2)
	}
	rows, err := strconv.Atoi(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := write(rows, os.Args[2], os.Args[3]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func write(rows int, csvPath, rawPath string) error {
	cf, err := os.Create(csvPath)
	if err != nil {
		return err
	}
	defer cf.Close()
	rf, err := os.Create(rawPath)
	if err != nil {
		return err
	}
	defer rf.Close()
	c, r := bufio.NewWriterSize(cf, 1<<20), bufio.NewWriterSize(rf, 1<<20)
	c.WriteString("y")
	for j := range features {
		fmt.Fprintf(c, ",f%d", j)
	}
	c.WriteString("\n")
	rng := rand.New(rand.NewSource(7))
	w := make([]float64, features)
	for j := range w {
		w[j] = rng.NormFloat64() * 0.5
	}
	x := make([]float32, features)
	buf := make([]byte, 0, 16*features)
	raw := make([]byte, 4*(features+1))
	for range rows {
		s := 0.0
		for j := range x {
			// Four decimals: the CSV holds exactly the float32 the raw file holds.
			v, _ := strconv.ParseFloat(strconv.FormatFloat(rng.NormFloat64(), 'f', 4, 64), 32)
			x[j] = float32(v)
			s += w[j] * v
		}
		s += math.Sin(2*float64(x[0])) + float64(x[1]*x[2]) + rng.NormFloat64()
		y := float32(0)
		if s > 0 {
			y = 1
		}
		buf = buf[:0]
		buf = strconv.AppendInt(buf, int64(y), 10)
		binary.LittleEndian.PutUint32(raw, math.Float32bits(y))
		for j, v := range x {
			buf = append(buf, ',')
			buf = strconv.AppendFloat(buf, float64(v), 'f', -1, 32)
			binary.LittleEndian.PutUint32(raw[4*(j+1):], math.Float32bits(v))
		}
		buf = append(buf, '\n')
		c.Write(buf)
		r.Write(raw)
	}
	if err := c.Flush(); err != nil {
		return err
	}
	return r.Flush()
}
