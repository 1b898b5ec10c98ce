// Command writeprobe runs inside a container (podman exec) and reports, as JSON, the user it runs
// as and whether it can create a file in each folder given on its command line.
package main

import (
	"encoding/json"
	"os"
	"path/filepath"
)

func main() {
	res := struct {
		UID, GID int
		Writes   map[string]string // folder: "ok" or the error
	}{os.Getuid(), os.Getgid(), map[string]string{}}
	for _, dir := range os.Args[1:] {
		p := filepath.Join(dir, "writeprobe")
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			res.Writes[dir] = err.Error()
			continue
		}
		_ = os.Remove(p)
		res.Writes[dir] = "ok"
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
}
