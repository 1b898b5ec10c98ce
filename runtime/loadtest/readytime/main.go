// Command readytime measures how long a model server takes from exec to its first 200 on a
// readiness URL, and its resident memory at that moment, over several starts.
//
//	readytime -n 5 -url http://127.0.0.1:8080/v2/health/ready -- gangboost-runtime --http_port 8080 ...
//
// It prints one JSON object: every start's time, the best and the median, and VmRSS of each start
// read from /proc/<pid>/status right after it became ready.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type result struct {
	ReadyMS   []float64 `json:"ready_ms"`
	BestMS    float64   `json:"best_ms"`
	MedianMS  float64   `json:"median_ms"`
	RSSKiB    []int64   `json:"rss_kib"`
	PollEvery string    `json:"poll_interval"`
}

func main() {
	var (
		n        = flag.Int("n", 5, "starts to measure")
		url      = flag.String("url", "", "readiness URL; the first 200 counts as ready")
		interval = flag.Duration("interval", time.Millisecond, "poll interval")
		limit    = flag.Duration("timeout", 60*time.Second, "longest a start may take")
	)
	flag.Parse()
	if *url == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: readytime -n N -url URL -- command [args...]")
		os.Exit(2)
	}
	res := result{PollEvery: interval.String()}
	for i := 0; i < *n; i++ {
		d, rss, err := start(flag.Args(), *url, *interval, *limit)
		if err != nil {
			fmt.Fprintf(os.Stderr, "readytime: start %d of %s: %v\n", i+1, flag.Arg(0), err)
			os.Exit(1)
		}
		res.ReadyMS = append(res.ReadyMS, float64(d.Microseconds())/1000)
		res.RSSKiB = append(res.RSSKiB, rss)
	}
	sorted := slices.Clone(res.ReadyMS)
	slices.Sort(sorted)
	res.BestMS, res.MedianMS = sorted[0], sorted[len(sorted)/2]
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		os.Exit(1)
	}
}

// start runs the command once, polls url until it answers 200, reads the process' VmRSS, and
// stops the process with SIGTERM (SIGKILL after 5 s).
func start(argv []string, url string, interval, limit time.Duration) (time.Duration, int64, error) {
	client := &http.Client{Timeout: time.Second}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = nil, nil // the server's logs are not part of the figure
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				d := time.Since(t0)
				rss, err := vmRSS(cmd.Process.Pid)
				return d, rss, err
			}
		}
		select {
		case err := <-exited:
			return 0, 0, fmt.Errorf("exited before ready: %v", err)
		case <-ctx.Done():
			return 0, 0, errors.New("not ready within " + limit.String())
		case <-time.After(interval):
		}
	}
}

// vmRSS reads the resident set size of pid in KiB.
func vmRSS(pid int) (int64, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS line", pid)
}
