// Package ci tells whether the process runs in continuous integration, where a test that cannot
// find what it needs (a tool, a Python module, the control plane) must fail instead of skipping:
// a skip there would report a green run that tested nothing.
package ci

import (
	"os"
	"strings"
)

// Running reports whether the CI variable holds a true value. CI services spell it differently
// (GitHub Actions and GitLab set CI=true, others CI=1, some CI=yes), so any of 1, true, yes, on,
// in any case, counts; unset, empty, 0, false, no and off do not.
func Running() bool { return truthy(os.Getenv("CI")) }

func truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "t", "true", "y", "yes", "on":
		return true
	}
	return false
}
