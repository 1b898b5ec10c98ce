package launch

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxJobName keeps the names the Training Operator derives from a job (pods and Services
// "<job>-worker-<i>", DNS-1035 labels of at most 63 characters) valid for up to 9999 workers.
const maxJobName = 45

// JobName is the job's name for a step: the same for every attempt of the step, different for
// every run and task. It reads "<task>-<hash>": the task name made a DNS label (lower case,
// letters, digits, '-'), cut to fit, and 10 hex digits of sha256(run UUID, task name).
func JobName(id Identity) string {
	sum := sha256.Sum256([]byte(id.RunID + "\x00" + id.TaskName))
	hash := hex.EncodeToString(sum[:])[:10]
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(id.TaskName) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		default:
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
				dash = true
			}
		}
	}
	prefix := strings.Trim(b.String(), "-")
	if max := maxJobName - len(hash) - 1; len(prefix) > max {
		prefix = strings.TrimRight(prefix[:max], "-")
	}
	// A DNS-1035 label starts with a letter.
	if prefix == "" || prefix[0] < 'a' || prefix[0] > 'z' {
		prefix = "xgb" + strings.TrimRight("-"+prefix, "-")
		if max := maxJobName - len(hash) - 1; len(prefix) > max {
			prefix = strings.TrimRight(prefix[:max], "-")
		}
	}
	return prefix + "-" + hash
}
