package prepare

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gangboost/gangboost/internal/contract/dataschema"

	"github.com/gangboost/gangboost/internal/training/dataset"
)

// Schema is schema.json: what the split files hold. The JSON names are read by other steps
// (evaluate reads classes and label): never rename one.
type Schema struct {
	Source string `json:"source"`
	// Columns are the columns of train.csv and test.csv in file order: the features, then the
	// label. A categorical feature (a text column of the data set) holds category codes, and
	// its column names the categories.
	Columns  []dataschema.Column `json:"columns"`
	Features []string            `json:"features"`
	Label    string              `json:"label"`
	// LabelType is "string" (class names), "integer" or "float".
	LabelType string `json:"label_type"`
	// Classes are the class labels in class-index order, as the trainer numbers them: sorted
	// names for string labels (index = position), sorted values for integer labels (the trainer
	// takes the value itself as the index). Empty when the split was not stratified.
	Classes      []string       `json:"classes,omitempty"`
	Stratified   bool           `json:"stratified"`
	Rows         int            `json:"rows"`
	TrainRows    int            `json:"train_rows"`
	TestRows     int            `json:"test_rows"`
	TrainClasses map[string]int `json:"train_class_counts,omitempty"`
	TestClasses  map[string]int `json:"test_class_counts,omitempty"`
	TestFraction float64        `json:"test_fraction"`
	Seed         int64          `json:"seed"`
	Train        string         `json:"train"`
	Test         string         `json:"test"`
}

// ColumnNames are the columns' names in file order.
func (s *Schema) ColumnNames() []string {
	names := make([]string, len(s.Columns))
	for i, c := range s.Columns {
		names[i] = c.Name
	}
	return names
}

func newSchema(m, train, test *dataset.Matrix, classes []string, labelType string, stratified bool) *Schema {
	s := &Schema{Label: m.LabelName, LabelType: labelType, Stratified: stratified,
		Features: m.FeatureNames, Rows: m.Rows, TrainRows: train.Rows, TestRows: test.Rows,
		Train: TrainFile, Test: TestFile}
	for j, f := range m.FeatureNames {
		c := dataschema.Column{Name: f, Type: dataschema.TypeFloat}
		if m.Categories != nil && m.Categories[j] != nil {
			c.Type, c.Categories = dataschema.TypeCategory, m.Categories[j]
		}
		s.Columns = append(s.Columns, c)
	}
	s.Columns = append(s.Columns, dataschema.Column{Name: m.LabelName, Type: labelType})
	if stratified {
		s.Classes = classes
		s.TrainClasses, s.TestClasses = classCounts(train), classCounts(test)
	}
	return s
}

func classCounts(m *dataset.Matrix) map[string]int {
	counts := make(map[string]int, len(m.Classes))
	for _, c := range m.Classes {
		counts[c] = 0
	}
	for _, l := range m.Labels {
		counts[m.Classes[int(l)]]++
	}
	return counts
}

// ReadSchema reads a data set folder's schema.json.
func ReadSchema(dir string) (*Schema, error) {
	p := filepath.Join(dir, SchemaFile)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	var s Schema
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("read %s: %w", p, err)
	}
	return &s, nil
}
