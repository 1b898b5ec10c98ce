package modeldir

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// modelExtensions are the names XGBoost's save_model is given: JSON, UBJSON and the legacy
// binary format (.bst, .model, .bin). KServe's xgbserver loads the one such file a folder holds
// whatever its name; so does the runtime, and the file is read by its content, not its name.
var modelExtensions = map[string]bool{".json": true, ".ubj": true, ".bst": true, ".model": true, ".bin": true}

// pickleExtensions are what pickle.dump and joblib.dump are given. They are never loaded:
// unpickling runs code.
var pickleExtensions = map[string]bool{".pkl": true, ".pickle": true, ".joblib": true, ".sav": true}

// FindModelFile returns the one model file in dir: a regular file with a model extension,
// other than metadata.json and hidden files (the trainer's temporary files). None, or more than
// one, is an error naming what the folder holds; a folder holding only a pickle gets an error
// saying how to convert it.
func FindModelFile(dir string) (string, error) {
	models, pickles, others, err := scan(dir)
	if err != nil {
		return "", err
	}
	switch {
	case len(models) == 1:
		return filepath.Join(dir, models[0]), nil
	case len(models) > 1:
		return "", fmt.Errorf("%s holds %d model files (%s); a model folder holds one: remove all but the one to serve",
			dir, len(models), strings.Join(models, ", "))
	case len(pickles) > 0:
		return "", fmt.Errorf("%s is a Python pickle; gangboost never loads pickles (unpickling runs code): load it in Python and save the booster with booster.save_model(\"model.json\")",
			filepath.Join(dir, pickles[0]))
	}
	found := "it is empty"
	if len(others) > 0 {
		found = "it holds " + strings.Join(others, ", ")
	}
	return "", fmt.Errorf("no model file in %s: want one XGBoost save_model file (.json, .ubj, or the legacy binary .bst/.model/.bin); %s", dir, found)
}

// HoldsModel reports whether dir itself holds a model file (or a pickle, or several): whether
// it is one model's folder rather than a repository of model folders.
func HoldsModel(dir string) bool {
	models, pickles, _, err := scan(dir)
	return err == nil && len(models)+len(pickles) > 0
}

// scan sorts the files of dir (symlinks followed) into model files, pickles and others,
// skipping hidden files and metadata.json.
func scan(dir string) (models, pickles, others []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read model folder: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || name == MetadataFile {
			continue
		}
		// Follow symlinks (KServe's storage initializer and ConfigMap mounts use them); skip
		// folders. Anything else is a file to consider, a pipe that delivers a model too.
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.IsDir() {
			continue
		}
		ext := strings.ToLower(filepath.Ext(name))
		switch {
		case modelExtensions[ext]:
			models = append(models, name)
		case pickleExtensions[ext]:
			pickles = append(pickles, name)
		default:
			others = append(others, name)
		}
	}
	sort.Strings(models)
	return models, pickles, others, nil
}
