// Command kfpstep is a tiny KFP component for the local runner's tests. Installed under the names
// produce, transform and consume, it reads its ExecutorInput ({{$}}) with internal/kfp, checks that
// the placeholders in its arguments were resolved as KFP's launcher resolves them, and writes its
// outputs. The input "behave" (task=fail|sleep|serve|chatty|escape, comma separated) makes a task
// fail, sleep (with a child that ignores SIGTERM), start a server that outlives the step and record
// it, print 20000 lines at once, or escape: leave a process in a group of its own without
// recording it.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gangboost/gangboost/internal/kfp"
)

func main() {
	name := filepath.Base(os.Args[0])
	if len(os.Args) > 1 && (os.Args[1] == "serve" || os.Args[1] == "linger") {
		helper(os.Args[1])
		return
	}
	if err := run(name, os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(4)
	}
}

func helper(mode string) {
	if mode == "linger" {
		signal.Ignore(syscall.SIGTERM)
		time.Sleep(time.Hour)
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.Exit(1)
	}
	url := "http://" + ln.Addr().String()
	rec, _ := json.Marshal(map[string]any{"pid": os.Getpid(), "pgid": os.Getpid(), "name": "tiny-server", "url": url})
	dir := filepath.Join(os.Getenv("GANGBOOST_LOCAL_STATE"), "processes")
	_ = os.MkdirAll(dir, 0o755)
	_ = os.WriteFile(filepath.Join(dir, "tiny-server.json"), rec, 0o644)
	_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") }))
}

func run(name string, args []string) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	in := fs.String("executor-input", "", "")
	checks := map[string]*string{}
	for _, f := range []string{"message", "count", "data", "n-file", "in-data", "in-data-uri", "factor", "metrics", "score", "output-file", "metadata"} {
		checks[f] = fs.String(f, "\x00", "")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	e, err := kfp.ParseExecutorInput([]byte(*in))
	if err != nil {
		return err
	}
	// What the step received as {{$}}, for the tests to compare with the run's record of it.
	if err := os.WriteFile(filepath.Join(filepath.Dir(e.OutputFile()), "received-executor-input"), []byte(*in), 0o644); err != nil {
		return err
	}
	task, _ := e.String("task_name", "")
	behave, _ := e.String("behave", "")
	for _, b := range strings.Split(behave, ",") {
		t, what, _ := strings.Cut(b, "=")
		if t != task {
			continue
		}
		switch what {
		case "fail":
			fmt.Println("line one before failing")
			fmt.Fprintln(os.Stderr, "the step fails on purpose")
			os.Exit(3)
		case "sleep":
			child := exec.Command(os.Args[0], "linger")
			if err := child.Start(); err != nil {
				return err
			}
			fmt.Println("sleeping, child", child.Process.Pid)
			time.Sleep(time.Hour)
		case "chatty":
			// A line per boosting round of a fast trainer, 20000 of them.
			w := bufio.NewWriter(os.Stdout)
			for i := 1; i <= 20000; i++ {
				fmt.Fprintf(w, "level=INFO msg=round round=%d of=20000 train-rmse=0.5\n", i)
			}
			w.Flush()
		case "escape":
			// A process that leaves its step's group and records nothing: the run's sweep finds it.
			child := exec.Command(os.Args[0], "linger")
			child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := child.Start(); err != nil {
				return err
			}
			fmt.Println("escaped, pid", child.Process.Pid)
		case "serve":
			self, _ := os.Executable()
			srv := exec.Command(self, "serve")
			srv.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := srv.Start(); err != nil {
				return err
			}
			rec := filepath.Join(os.Getenv("GANGBOOST_LOCAL_STATE"), "processes", "tiny-server.json")
			for i := 0; i < 200; i++ {
				if _, err := os.Stat(rec); err == nil {
					break
				}
				time.Sleep(25 * time.Millisecond)
			}
			fmt.Println("server started, pid", srv.Process.Pid)
		}
	}
	want := func(flagName, value string) error {
		if got := *checks[flagName]; got != "\x00" && got != value {
			return fmt.Errorf("--%s: the placeholder resolved to %q, the executor input says %q", flagName, got, value)
		}
		return nil
	}
	for _, env := range []string{"GANGBOOST_BACKEND", "GANGBOOST_BIN_DIR", "GANGBOOST_LOCAL_STATE"} {
		if os.Getenv(env) == "" {
			return fmt.Errorf("%s is not set", env)
		}
	}
	claim, _ := e.String("pvc_mount_path", "")
	switch name {
	case "produce":
		msg, _ := e.String("message", "")
		count, err := e.Int("count", -1)
		if err != nil {
			return err
		}
		runID, _ := e.String("run_id", "")
		if len(runID) != 36 || task != "produce" {
			return fmt.Errorf("run_id %q, task_name %q: want a UUID and produce", runID, task)
		}
		data, _ := e.OutputArtifactPath("data")
		nFile, _ := e.OutputParameterFile("n")
		for f, v := range map[string]string{"message": msg, "count": strconv.FormatInt(count, 10), "data": data, "n-file": nFile, "output-file": e.OutputFile()} {
			if err := want(f, v); err != nil {
				return err
			}
		}
		var rows strings.Builder
		for i := int64(0); i < count; i++ {
			fmt.Fprintf(&rows, "%d,%s\n", i, msg)
		}
		if err := os.WriteFile(data, []byte(rows.String()), 0o644); err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(claim, "shared"), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(claim, "shared", "message.txt"), []byte(msg), 0o644); err != nil {
			return err
		}
		// n only in its output_file: the runner reads it back from there.
		if err := os.WriteFile(nFile, []byte(strconv.FormatInt(count*2, 10)), 0o644); err != nil {
			return err
		}
		fmt.Printf("produced %d rows\n", count)
		if err := e.SetParameter("text", msg+"!"); err != nil {
			return err
		}
		if err := e.SetArtifact("data", "", map[string]any{"rows": count}); err != nil {
			return err
		}
	case "transform":
		text, _ := e.String("text", "")
		n, err := e.Int("n", -1)
		if err != nil {
			return err
		}
		factor, _ := e.Float("factor", 0)
		inData := e.Input().GetInputs().GetArtifacts()["data"].GetArtifacts()[0]
		inPath, err := kfp.LocalPathForURI(inData.GetUri())
		if err != nil {
			return err
		}
		if err := want("in-data", inPath); err != nil {
			return err
		}
		if err := want("in-data-uri", inData.GetUri()); err != nil {
			return err
		}
		if err := want("factor", strconv.FormatFloat(factor, 'f', -1, 64)); err != nil {
			return err
		}
		md, _ := json.Marshal(inData.GetMetadata().AsMap())
		if got := *checks["metadata"]; got != "\x00" {
			var a, b any
			_ = json.Unmarshal([]byte(got), &a)
			_ = json.Unmarshal(md, &b)
			if fmt.Sprint(a) != fmt.Sprint(b) {
				return fmt.Errorf("--metadata %s, want %s", got, md)
			}
		}
		b, err := os.ReadFile(inPath)
		if err != nil {
			return err
		}
		rows := strings.Count(string(b), "\n")
		if float64(rows) != inData.GetMetadata().GetFields()["rows"].GetNumberValue() {
			return fmt.Errorf("input data has %d rows, its metadata says %v", rows, inData.GetMetadata().AsMap())
		}
		shared, err := os.ReadFile(filepath.Join(claim, "shared", "message.txt"))
		if err != nil || string(shared)+"!" != text {
			return fmt.Errorf("claim file %q (%v), text %q", shared, err, text)
		}
		metrics, _ := e.OutputArtifactPath("metrics")
		if err := want("metrics", metrics); err != nil {
			return err
		}
		score := float64(n) * factor
		fmt.Printf("score %v\n", score)
		report, _ := e.OutputArtifactPath("report")
		if err := os.WriteFile(report, []byte("<h1>tiny report</h1><p>score "+strconv.FormatFloat(score, 'f', -1, 64)+"</p>"), 0o644); err != nil {
			return err
		}
		_ = e.SetParameter("score", score)
		_ = e.SetArtifact("metrics", "", map[string]any{"score": score, "rows": rows})
		_ = e.SetArtifact("report", "", nil)
		_ = e.SetArtifact("cm", "", map[string]any{"confusionMatrix": map[string]any{
			"annotationSpecs": []any{map[string]any{"displayName": "no"}, map[string]any{"displayName": "yes"}},
			"rows":            []any{map[string]any{"row": []any{5, 1}}, map[string]any{"row": []any{0, 4}}},
		}})
	case "consume":
		score, _ := e.Float("score", -1)
		if err := want("score", strconv.FormatFloat(score, 'f', -1, 64)); err != nil {
			return err
		}
		m := e.Input().GetInputs().GetArtifacts()["metrics"].GetArtifacts()[0]
		if m.GetMetadata().GetFields()["score"].GetNumberValue() != score {
			return fmt.Errorf("metrics metadata %v, score %v", m.GetMetadata().AsMap(), score)
		}
		text, _ := e.String("text", "")
		_ = e.SetParameter("summary", fmt.Sprintf("%s %v", text, score))
	default:
		return fmt.Errorf("unknown component %s", name)
	}
	return e.WriteOutput()
}
