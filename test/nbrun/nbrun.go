// Package nbrun executes Jupyter notebooks for tests, as a data scientist's kernel runs them:
// Debian's python3 with nbclient, a failing cell failing the run, and what the cells showed read
// back from the executed copy.
package nbrun

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Python is Debian's interpreter, for which python3-nbclient, -ipykernel, -matplotlib, -requests
// and -numpy are installed (scripts/deps.sh).
const Python = "/usr/bin/python3"

// execute runs a notebook with nbclient and writes the executed copy to argv[2], argv[3] the
// kernel's working folder; a cell that raises fails with its traceback.
const execute = `
import sys, nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": sys.argv[3]}}).execute()
nbformat.write(nb, sys.argv[2])
`

// Require fails t unless Python can run notebooks with what they import.
func Require(t testing.TB) {
	t.Helper()
	if err := exec.Command(Python, "-c", "import nbclient, nbformat, ipykernel, matplotlib, requests, numpy").Run(); err != nil {
		t.Fatalf("%s cannot import nbclient, nbformat, ipykernel, matplotlib, requests and numpy (apt-get install python3-nbclient python3-ipykernel python3-matplotlib python3-requests python3-numpy): %v", Python, err)
	}
}

// Command is the command that executes notebook into out with dir as the kernel's working
// folder; the caller sets its environment.
func Command(notebook, out, dir string) *exec.Cmd {
	return exec.Command(Python, "-c", execute, notebook, out, dir)
}

// LastLine is the last line of a failed run's output that is not blank: the exception of the
// cell that raised (nbclient prints its traceback last), such as "RuntimeError: kubectl ... exited 1".
func LastLine(output []byte) string {
	lines := strings.Split(strings.TrimRight(string(output), " \n"), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// OutputsText is what the cells of an executed notebook showed, and nothing of their source:
// printed text, results' and displays' text/plain (each preceded by its MIME types, so an
// image shows as image/png) and errors.
func OutputsText(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var nb struct {
		Cells []struct {
			Outputs []struct {
				Text   any            `json:"text"`
				Data   map[string]any `json:"data"`
				EName  string         `json:"ename"`
				EValue string         `json:"evalue"`
			} `json:"outputs"`
		} `json:"cells"`
	}
	if err := json.Unmarshal(b, &nb); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	// nbformat stores multi-line text as a string or a list of lines.
	text := func(v any) string {
		switch v := v.(type) {
		case string:
			return v
		case []any:
			var sb strings.Builder
			for _, l := range v {
				s, _ := l.(string)
				sb.WriteString(s)
			}
			return sb.String()
		}
		return ""
	}
	var sb strings.Builder
	for _, c := range nb.Cells {
		for _, o := range c.Outputs {
			sb.WriteString(text(o.Text))
			for mime := range o.Data {
				sb.WriteString(mime + "\n")
			}
			sb.WriteString(text(o.Data["text/plain"]) + "\n")
			if o.EName != "" {
				sb.WriteString(o.EName + ": " + o.EValue + "\n")
			}
		}
	}
	return sb.String()
}
