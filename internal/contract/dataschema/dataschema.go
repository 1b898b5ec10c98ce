// Package dataschema is the part of schema.json (prepare-data's description of the split files
// it writes) that the trainer reads too: the columns, their types, and the names of a categorical
// column's categories, whose codes the files hold.
package dataschema

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// Column types of the split files' columns.
const (
	TypeFloat = "float"
	// TypeCategory is a feature whose values are category codes: the position of the category's
	// name in the column's Categories.
	TypeCategory = "category"
)

// Column is one column of the split files.
type Column struct {
	Name string `json:"name"`
	Type string `json:"type"`
	// Categories are a TypeCategory column's category names in code order.
	Categories []string `json:"categories,omitempty"`
}

// MaxBytes bounds schema.json: its category lists are bounded by the loader (65,536 names of
// at most 1 KiB a column), and a file beyond this is not prepare-data's.
const MaxBytes = 256 << 20

// Categories are the category names of cols' categorical columns by column name; nil without
// one.
func Categories(cols []Column) map[string][]string {
	var out map[string][]string
	for _, c := range cols {
		if c.Type != TypeCategory {
			continue
		}
		if out == nil {
			out = map[string][]string{}
		}
		out[c.Name] = append([]string{}, c.Categories...) // not nil: every row may be missing
	}
	return out
}

// ReadCategories reads the category names of the categorical columns a schema.json names.
func ReadCategories(path string) (map[string][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > MaxBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes: not a data set's schema.json", path, MaxBytes)
	}
	var s struct {
		Columns []Column `json:"columns"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: not a schema.json: %w", path, err)
	}
	if s.Columns == nil {
		return nil, fmt.Errorf("%s names no columns: not a data set's schema.json (prepare-data writes one beside train.csv)", path)
	}
	return Categories(s.Columns), nil
}
