package prepare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gangboost/gangboost/internal/dataset"
)

// publish writes the three files into a temporary folder beside dir (same filesystem), syncs
// them, and renames the folder into place: a trainer that starts while a re-run rewrites the
// data set sees the old split or the new one (or, for the moment between two renames, none),
// never a train.csv from one and a test.csv from the other.
func publish(dir string, train, test *dataset.Matrix, schema *Schema) (err error) {
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("write data set %s: %w", dir, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return fmt.Errorf("write data set %s: %w", dir, err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	for _, f := range []struct {
		name string
		m    *dataset.Matrix
	}{{TrainFile, train}, {TestFile, test}} {
		var b bytes.Buffer
		if err := f.m.WriteCSV(&b); err != nil {
			return fmt.Errorf("write data set %s: %s: %w", dir, f.name, err)
		}
		if err := writeSynced(filepath.Join(tmp, f.name), b.Bytes()); err != nil {
			return fmt.Errorf("write data set %s: %w", dir, err)
		}
	}
	js, err := json.MarshalIndent(schema, "", "  ")
	if err != nil {
		return err
	}
	if err := writeSynced(filepath.Join(tmp, SchemaFile), append(js, '\n')); err != nil {
		return fmt.Errorf("write data set %s: %w", dir, err)
	}
	// MkdirTemp makes the folder private (0700); trainer pods may run as another user.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("write data set %s: %w", dir, err)
	}
	if err := swapIn(tmp, dir); err != nil {
		return fmt.Errorf("write data set %s: %w", dir, err)
	}
	return nil
}

// swapIn renames tmp to dir; an existing dir is first renamed aside and removed afterwards.
func swapIn(tmp, dir string) error {
	if _, err := os.Lstat(dir); err != nil {
		return os.Rename(tmp, dir)
	}
	aside := tmp + ".old"
	if err := os.Rename(dir, aside); err != nil {
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		if rerr := os.Rename(aside, dir); rerr != nil {
			return fmt.Errorf("%w (and restoring the previous folder from %s failed: %v)", err, aside, rerr)
		}
		return err
	}
	// The new split is in place; failing to remove the old one is not a failed step.
	_ = os.RemoveAll(aside)
	return nil
}

func writeSynced(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}
