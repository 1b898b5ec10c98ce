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
	c, err := scan(dir)
	if err != nil {
		return "", err
	}
	switch {
	case len(c.models) == 1:
		return filepath.Join(dir, c.models[0]), nil
	case len(c.models) > 1:
		return "", fmt.Errorf("%s holds %d model files (%s); a model folder holds one: remove all but the one to serve",
			dir, len(c.models), strings.Join(c.models, ", "))
	case len(c.pickles) > 0:
		return "", fmt.Errorf("%s is a Python pickle; gangboost never loads pickles (unpickling runs code): load it in Python and save the booster with booster.save_model(\"model.json\")",
			filepath.Join(dir, c.pickles[0]))
	}
	return "", fmt.Errorf("no model file in %s: want one XGBoost save_model file (.json, .ubj, or the legacy binary .bst/.model/.bin); %s", dir, c.describe(dir))
}

// HoldsModel reports whether dir itself holds a model file (or a pickle, or several): whether
// it is one model's folder rather than a repository of model folders.
func HoldsModel(dir string) bool {
	c, err := scan(dir)
	return err == nil && len(c.models)+len(c.pickles) > 0
}

// contents is what scan found in a folder.
type contents struct {
	models, pickles []string
	// others are the files that are neither, then hidden files, then sub-folders ("name/").
	others   []string
	metadata bool // metadata.json is there
}

// describe says what a folder without a model file holds, for an error. metadata.json alone is
// the folder of a model whose file was removed, or not copied with it: it names that file.
func (c contents) describe(dir string) string {
	held := c.others
	if c.metadata {
		held = append([]string{MetadataFile}, held...)
	}
	if len(held) == 0 {
		return "it is empty"
	}
	listed := held
	if len(listed) > maxListed {
		listed = append(listed[:maxListed:maxListed], fmt.Sprintf("and %d more", len(held)-maxListed))
	}
	found := "it holds " + strings.Join(listed, ", ")
	if !c.metadata {
		return found
	}
	found += " but no model file"
	if md, err := ReadMetadata(dir); err == nil && md.ModelFile != "" {
		found += fmt.Sprintf(" (its metadata.json is for %s)", md.ModelFile)
	}
	return found + ": copy the model file next to metadata.json, or train the model again"
}

// scan sorts the entries of dir (symlinks followed) into model files, pickles and others,
// noting metadata.json apart.
func scan(dir string) (contents, error) {
	var c contents
	entries, err := os.ReadDir(dir)
	if err != nil {
		return c, fmt.Errorf("read model folder: %w", err)
	}
	var hidden, folders []string
	for _, e := range entries {
		name := e.Name()
		if name == MetadataFile {
			c.metadata = true
			continue
		}
		// Follow symlinks (KServe's storage initializer and ConfigMap mounts use them).
		// Anything but a folder is a file to consider, a pipe that delivers a model too.
		st, err := os.Stat(filepath.Join(dir, name))
		switch {
		case err != nil:
			continue
		case st.IsDir():
			folders = append(folders, name+"/")
			continue
		case strings.HasPrefix(name, "."):
			// Hidden files (the trainer's temporary files) are never the model.
			hidden = append(hidden, name)
			continue
		}
		ext := strings.ToLower(filepath.Ext(name))
		switch {
		case modelExtensions[ext]:
			c.models = append(c.models, name)
		case pickleExtensions[ext]:
			c.pickles = append(c.pickles, name)
		default:
			c.others = append(c.others, name)
		}
	}
	sort.Strings(c.models)
	c.others = append(append(c.others, hidden...), folders...)
	return c, nil
}
