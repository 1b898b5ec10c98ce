package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/gangboost/gangboost/internal/contract/claim"
	"github.com/gangboost/gangboost/internal/plumbing/procgroup"
	"github.com/gangboost/gangboost/internal/steps/deploy"
)

var _ deploy.Promoter = (*Backend)(nil)

// ServingRecord is serving/<service>.json on the claim: which model a service name serves (its
// champion) and the one before it. It is the local backend's counterpart of an
// InferenceService's stable predictor, and outlives the run's processes: the next run starts
// the champion again to compare its challenger with, with the runtime flags it was deployed with
// (an InferenceService's stable predictor keeps its args likewise).
type ServingRecord struct {
	ModelURI         string    `json:"model_uri"`
	RuntimeArgs      []string  `json:"runtime_args,omitempty"`
	PreviousModelURI string    `json:"previous_model_uri,omitempty"`
	RunID            string    `json:"run_id,omitempty"`
	Updated          time.Time `json:"updated"`
}

// challengerSep joins a service's name and a challenger's in the challenger's process record
// (<service>.<challenger>.json): '.' is in no service name (a DNS-1035 label).
const challengerSep = "."

func challengerKey(service, challenger string) string { return service + challengerSep + challenger }

// modelName is the V2 model name a process record key serves: the service's name.
func modelName(key string) string {
	name, _, _ := strings.Cut(key, challengerSep)
	return name
}

func servingRecordPath(s *deploy.Service) (string, error) {
	rel, err := claim.ServingRecordPath(s.Name)
	if err != nil {
		return "", err
	}
	return claim.Join(s.MountPath, rel)
}

// ReadServing reads a service's serving record under the claim folder; nil when there is none.
func ReadServing(s *deploy.Service) (*ServingRecord, error) {
	path, err := servingRecordPath(s)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r ServingRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("serving record %s: %w", path, err)
	}
	return &r, nil
}

// lockServing holds an exclusive lock on the service's serving record (flock on a file beside
// it) until unlock: two runs promoting into one service take turns, and the second sees the
// first's champion.
func lockServing(s *deploy.Service) (unlock func(), err error) {
	path, err := servingRecordPath(s)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}

// recordServing writes the serving record: s's model serves, previous before it ("" with
// fromRecord: the model the record named, when it differs).
func (b *Backend) recordServing(s *deploy.Service, previous string, fromRecord bool) error {
	unlock, err := lockServing(s)
	if err != nil {
		return err
	}
	defer unlock()
	return writeServingLocked(s, previous, fromRecord)
}

func writeServingLocked(s *deploy.Service, previous string, fromRecord bool) error {
	old, err := ReadServing(s)
	if err != nil {
		return err
	}
	rec := ServingRecord{ModelURI: s.ModelURI, RuntimeArgs: s.RuntimeArgs, PreviousModelURI: previous, RunID: s.RunID, Updated: time.Now().UTC()}
	if fromRecord && old != nil {
		rec.PreviousModelURI = old.PreviousModelURI
		if old.ModelURI != s.ModelURI {
			rec.PreviousModelURI = old.ModelURI
		}
	}
	path, err := servingRecordPath(s)
	if err != nil {
		return err
	}
	js, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	return replaceFile(path, append(js, '\n'))
}

// Serving reads the claim's serving record and the challengers this run's state records.
func (b *Backend) Serving(ctx context.Context, s *deploy.Service) (*deploy.Serving, error) {
	rec, err := ReadServing(s)
	if err != nil || rec == nil {
		return &deploy.Serving{}, err
	}
	out := &deploy.Serving{ModelURI: rec.ModelURI, PreviousModelURI: rec.PreviousModelURI}
	files, _ := filepath.Glob(filepath.Join(ProcessesDir(b.StateDir), s.Name+challengerSep+"*.json"))
	for _, f := range files {
		out.Challengers = append(out.Challengers, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), s.Name+challengerSep), ".json"))
	}
	return out, nil
}

// ApplyChallenger starts the challenger's runtime, and the champion's where no process of this
// run serves it (a new run: the previous run's processes ended with it).
func (b *Backend) ApplyChallenger(ctx context.Context, s *deploy.Service, c deploy.Challenger) error {
	if rec, err := ReadRecord(b.StateDir, s.Name); err != nil || rec.ModelURI != c.Champion || !procgroup.Alive(rec.PID) {
		var args []string // the champion's own runtime flags, not this run's
		if served, err := ReadServing(s); err == nil && served != nil && served.ModelURI == c.Champion {
			args = served.RuntimeArgs
		}
		champion, err := championService(s, c.Champion, args)
		if err != nil {
			return err
		}
		if _, err := b.start(ctx, champion, s.Name); err != nil {
			return fmt.Errorf("start the champion %s: %w", c.Champion, err)
		}
	}
	_, err := b.start(ctx, s, challengerKey(s.Name, c.Name))
	return err
}

// championService is s serving the champion's model, with the champion's runtime flags, instead.
func championService(s *deploy.Service, modelURI string, runtimeArgs []string) (*deploy.Service, error) {
	if err := deploy.CheckModelURI(modelURI); err != nil {
		return nil, fmt.Errorf("the champion's %w", err)
	}
	champion := *s
	champion.ModelURI, champion.Claim, champion.ModelPath, champion.RuntimeArgs = modelURI, "", "", runtimeArgs
	if u, err := claim.ParseURI(modelURI); err == nil {
		champion.Claim, champion.ModelPath = u.Claim, u.Path
	}
	return &champion, nil
}

// WaitChallenger waits for the champion (when ApplyChallenger started it) and the challenger to
// be ready. A challenger that cannot serve is stopped; the champion serves on.
func (b *Backend) WaitChallenger(ctx context.Context, s *deploy.Service, c deploy.Challenger, progress func(string)) (*deploy.Endpoint, *deploy.Endpoint, error) {
	b.mu.Lock()
	_, startedChampion := b.started[s.Name]
	b.mu.Unlock()
	var champion *deploy.Endpoint
	if startedChampion {
		ep, err := b.finish(ctx, s.Name, func(line string) { progress("champion: " + line) })
		if err != nil {
			b.stopStarted(challengerKey(s.Name, c.Name))
			return nil, nil, fmt.Errorf("the champion %s does not serve: %w", c.Champion, err)
		}
		champion = ep
	} else {
		rec, err := ReadRecord(b.StateDir, s.Name)
		if err != nil {
			return nil, nil, err
		}
		champion = rec.endpoint(s.Name)
	}
	ep, err := b.finish(ctx, challengerKey(s.Name, c.Name), func(line string) { progress("challenger " + c.Name + ": " + line) })
	if err != nil {
		return nil, nil, err
	}
	return ep, champion, nil
}

// stopStarted stops a process this backend started and has not recorded.
func (b *Backend) stopStarted(key string) {
	b.mu.Lock()
	p := b.started[key]
	b.mu.Unlock()
	if p != nil {
		b.stop(p.rec, p.proc)
		os.Remove(p.log)
	}
}

// Promote makes the challenger the service: under the serving record's lock, it checks that
// c.Champion still serves, records the challenger's model with the champion as the previous one,
// moves the challenger's process record to the service's name (no restart: the same process
// serves on) and stops the champion's process.
func (b *Backend) Promote(ctx context.Context, s *deploy.Service, c deploy.Challenger) error {
	unlock, err := lockServing(s)
	if err != nil {
		return err
	}
	defer unlock()
	rec, err := ReadServing(s)
	if err != nil {
		return err
	}
	if rec == nil || rec.ModelURI != c.Champion {
		now := "nothing"
		if rec != nil {
			now = rec.ModelURI
		}
		if err := b.Reject(ctx, s, c); err != nil {
			return fmt.Errorf("%w (and removing the challenger failed: %v)", &deploy.ChampionChangedError{Service: s.Name, Compared: c.Champion, Serving: now}, err)
		}
		return &deploy.ChampionChangedError{Service: s.Name, Compared: c.Champion, Serving: now}
	}
	key := challengerKey(s.Name, c.Name)
	ch, err := ReadRecord(b.StateDir, key)
	if err != nil {
		return fmt.Errorf("challenger %s of %s: %w (was it deployed by this run?)", c.Name, s.Name, err)
	}
	if ch.ModelURI != s.ModelURI {
		return fmt.Errorf("challenger %s of %s serves %s, not %s", c.Name, s.Name, ch.ModelURI, s.ModelURI)
	}
	// The challenger serves on with the runtime flags it was started with, which the promote
	// step's service does not carry.
	promotedService := *s
	promotedService.RuntimeArgs = ch.RuntimeArgs
	if err := writeServingLocked(&promotedService, c.Champion, false); err != nil {
		return err
	}
	old, oldErr := ReadRecord(b.StateDir, s.Name)
	promoted := *ch
	promoted.Name = s.Name
	if err := writeRecord(b.StateDir, promoted); err != nil {
		return err
	}
	_ = os.Rename(LogPath(b.StateDir, key), LogPath(b.StateDir, s.Name))
	_ = os.Remove(RecordPath(b.StateDir, key))
	if oldErr == nil && old.PID != ch.PID && procgroup.Alive(old.PID) {
		b.retire(s.Name, *old, ch.PID, func(string) {})
	}
	return nil
}

// Reject stops the challenger and removes its record; the champion is not touched.
func (b *Backend) Reject(ctx context.Context, s *deploy.Service, c deploy.Challenger) error {
	key := challengerKey(s.Name, c.Name)
	rec, err := ReadRecord(b.StateDir, key)
	if errors.Is(err, os.ErrNotExist) {
		return nil // already gone
	}
	if err != nil {
		return err
	}
	b.stop(*rec, nil)
	_ = os.Remove(LogPath(b.StateDir, key))
	return os.Remove(RecordPath(b.StateDir, key))
}

// SplitsTraffic: never; each local runtime answers at its own address.
func (b *Backend) SplitsTraffic(ctx context.Context, s *deploy.Service) (bool, string) {
	return false, "local runtimes each answer at their own address and nothing in front of them splits requests"
}
