package dataset

import (
	_ "embed"
	"strings"
)

// irisCSV is Fisher's Iris data (1936) as R's datasets::iris holds it: 150 rows, 50 per species.
// It is the UCI copy with the two rows UCI documents as wrong corrected (row 35: petal width
// 0.2; row 38: sepal width 3.6, petal length 1.4).
//
//go:embed iris.csv
var irisCSV string

const irisLabel = "species"

// Iris returns shard s of the built-in Iris data set: features sepal_length, sepal_width,
// petal_length, petal_width (cm), label "species" with classes setosa, versicolor, virginica
// (label indices 0, 1, 2). A shard of a world larger than 150 ranks may be empty (Rows 0); Load
// reports that as an error instead. Iris panics on an invalid shard (rank outside the world).
func Iris(s Shard) *Matrix {
	m, err := loadCSVReader(strings.NewReader(irisCSV), "iris.csv", csvOptions{label: irisLabel, allowEmptyShard: true}, s)
	if err != nil {
		panic("dataset.Iris: " + err.Error())
	}
	return m
}
