package manifests

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// YAMLDocs splits a multi-document YAML file (one of Files, or KServe's), dropping documents that
// hold only comments, so each can be decoded on its own.
func YAMLDocs(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		d, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(string(d), "\n") {
			if l := strings.TrimSpace(line); l != "" && l != "---" && !strings.HasPrefix(l, "#") {
				docs = append(docs, d)
				break
			}
		}
	}
}
