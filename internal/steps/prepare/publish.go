package prepare

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/gangboost/gangboost/internal/contract/modeldir"
	"github.com/gangboost/gangboost/internal/training/dataset"
)

// datasetFolder is a data set's folder: the split and its schema. A re-run replaces one; a folder
// holding anything else is refused rather than deleted.
var datasetFolder = modeldir.Kind{Name: "data set folder", Holds: func(name string) bool {
	return name == TrainFile || name == TestFile || name == SchemaFile
}}

// publish writes the three files as one folder (modeldir.PublishFolder): a trainer that starts
// while a re-run rewrites the data set sees the old split or the new one whole, never a train.csv
// from one and a test.csv from the other.
func publish(dir string, train, test *dataset.Matrix, schema *Schema) error {
	var files []modeldir.File
	for _, f := range []struct {
		name string
		m    *dataset.Matrix
	}{{TrainFile, train}, {TestFile, test}} {
		var b bytes.Buffer
		if err := f.m.WriteCSV(&b); err != nil {
			return fmt.Errorf("write data set %s: %s: %w", dir, f.name, err)
		}
		files = append(files, modeldir.File{Name: f.name, Data: b.Bytes()})
	}
	js, err := json.MarshalIndent(schema, "", "  ")
	if err != nil {
		return err
	}
	files = append(files, modeldir.File{Name: SchemaFile, Data: append(js, '\n')})
	if err := modeldir.PublishFolder(dir, datasetFolder, files); err != nil {
		return fmt.Errorf("write data set %s: %w", dir, err)
	}
	return nil
}
