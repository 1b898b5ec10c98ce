package localrun

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// UsageError is a malformed command-line pair (--param name=value, --claim-dir claim=DIR): a
// mistake in how the run was asked for, which a command reports with exit code 2 as it does a bad
// flag, rather than a fault of the package or of the run.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// NewOptions are the Options of a run of the package file with the --param name=value
// overrides: the package read and checked (ReadPackage), the overrides parsed (ParseOverrides; a
// malformed one is a *UsageError). The caller adds where the run goes and what it prints.
func NewOptions(file string, params []string) (Options, error) {
	pkg, err := ReadPackage(file)
	if err != nil {
		return Options{}, err
	}
	overrides, err := ParseOverrides(params)
	if err != nil {
		return Options{}, &UsageError{Err: err}
	}
	return Options{Package: pkg, Params: overrides}, nil
}

// ParseClaimDirs parses claim=DIR pairs (--claim-dir flags) into Options.Claims, each folder made
// absolute so that the steps, which run in other folders, find it; a malformed pair is a
// *UsageError.
func ParseClaimDirs(pairs []string) (map[string]string, error) {
	claims := map[string]string{}
	for _, kv := range pairs {
		claim, dir, ok := strings.Cut(kv, "=")
		if !ok || claim == "" || dir == "" {
			return nil, &UsageError{Err: fmt.Errorf("--claim-dir %q: want claim=DIR", kv)}
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, &UsageError{Err: fmt.Errorf("--claim-dir %q: %v", kv, err)}
		}
		claims[claim] = abs
	}
	return claims, nil
}

// ProgramDir is the folder of the running program, symlinks resolved: make build puts the
// components' binaries beside the command that runs them, so that folder is the default BinDir.
func ProgramDir() (string, error) {
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		return "", err
	}
	return filepath.Dir(self), nil
}

// ExitStatus is how a command that set up a run (NewOptions, ParseClaimDirs) and ran it (Run,
// with that backend) ends: its exit code and what to tell its user (empty after a success). A
// *UsageError is 2, as a bad flag is; a failed step's exit code passes through (1 when the step
// exited 0 but its outputs were wrong), with where its log and the run's report are; an
// interrupted run is 130, as a shell reports SIGINT, and says what was stopped and what was not;
// any other error is 1.
func ExitStatus(res *Result, err error, backend string) (code int, message string) {
	var se *StepError
	var usage *UsageError
	switch {
	case err == nil:
		return 0, ""
	case errors.As(err, &usage):
		return 2, err.Error()
	case errors.Is(err, ErrInterrupted):
		if backend == BackendKubernetes {
			// The steps' processes are stopped here; what they created on the cluster is not.
			return 130, "interrupted; every process the run started here is stopped, " +
				"but what its steps created on the cluster (an XGBoostJob, an InferenceService) keeps running: delete it with kubectl if it is not wanted"
		}
		return 130, "interrupted; every process the run started is stopped, the training gang's too"
	case errors.As(err, &se):
		message = err.Error()
		if res != nil {
			log := ""
			if t := res.Task(se.Task); t != nil {
				log = t.LogFile
			}
			message += fmt.Sprintf("\n  log: %s\n  report: %s", log, res.Report)
		}
		if se.ExitCode > 0 {
			return se.ExitCode, message
		}
		return 1, message
	default:
		return 1, err.Error()
	}
}
