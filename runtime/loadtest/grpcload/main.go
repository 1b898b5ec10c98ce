// Command grpcload is the load test's gRPC load generator, what wrk is for REST: it keeps
// -c ModelInfer calls in flight (one Iris row each, FP32 contents) over -conns connections for
// -d, after a warm-up, and prints the run's figures as one JSON line prefixed "WRK_JSON ", in
// the fields runtime/loadtest/post.lua prints for wrk.
//
//	grpcload -addr 127.0.0.1:8081 -model iris -c 32 -d 10s
//
// With -ready it only waits (up to -d) for ServerReady to answer true.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/gangboost/gangboost/runtime/grpc/inference"
)

type figures struct {
	Requests   int64   `json:"requests"`
	DurationUS int64   `json:"duration_us"`
	RPS        float64 `json:"rps"`
	P50US      int64   `json:"p50_us"`
	P90US      int64   `json:"p90_us"`
	P99US      int64   `json:"p99_us"`
	MaxUS      int64   `json:"max_us"`
	Errors     struct {
		Connect int64 `json:"connect"`
		Read    int64 `json:"read"`
		Write   int64 `json:"write"`
		Status  int64 `json:"status"`
		Timeout int64 `json:"timeout"`
	} `json:"errors"`
}

func main() {
	var (
		addr     = flag.String("addr", "127.0.0.1:8081", "server address")
		model    = flag.String("model", "iris", "model name")
		inflight = flag.Int("c", 32, "calls in flight")
		conns    = flag.Int("conns", 2, "connections the calls are spread over")
		duration = flag.Duration("d", 10*time.Second, "measured duration")
		warmup   = flag.Duration("warmup", 2*time.Second, "unmeasured warm-up before it")
		ready    = flag.Bool("ready", false, "only wait for ServerReady (up to -d)")
	)
	flag.Parse()
	if err := run(*addr, *model, *inflight, *conns, *duration, *warmup, *ready); err != nil {
		fmt.Fprintln(os.Stderr, "grpcload:", err)
		os.Exit(1)
	}
}

func run(addr, model string, inflight, conns int, duration, warmup time.Duration, ready bool) error {
	clients := make([]inference.GRPCInferenceServiceClient, max(conns, 1))
	for i := range clients {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return err
		}
		defer cc.Close()
		clients[i] = inference.NewGRPCInferenceServiceClient(cc)
	}
	if ready {
		return waitReady(clients[0], duration)
	}
	req := &inference.ModelInferRequest{
		ModelName: model,
		Inputs: []*inference.ModelInferRequest_InferInputTensor{{
			Name: "input-0", Datatype: "FP32", Shape: []int64{1, 4},
			Contents: &inference.InferTensorContents{Fp32Contents: []float32{5.1, 3.5, 1.4, 0.2}},
		}},
	}
	if _, err := clients[0].ModelInfer(context.Background(), req); err != nil {
		return fmt.Errorf("first call: %w", err)
	}
	load(clients, req, inflight, warmup)
	f := load(clients, req, inflight, duration)
	line, _ := json.Marshal(f)
	fmt.Printf("WRK_JSON %s\n", line)
	return nil
}

func waitReady(c inference.GRPCInferenceServiceClient, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		r, err := c.ServerReady(ctx, &inference.ServerReadyRequest{})
		cancel()
		if err == nil && r.GetReady() {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.Join(fmt.Errorf("not ready within %s", limit), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// load keeps inflight calls going for d and gathers every call's latency.
func load(clients []inference.GRPCInferenceServiceClient, req *inference.ModelInferRequest, inflight int, d time.Duration) figures {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		all      []time.Duration
		failures atomic.Int64
	)
	start := time.Now()
	stop := start.Add(d)
	for w := range inflight {
		wg.Add(1)
		go func(c inference.GRPCInferenceServiceClient) {
			defer wg.Done()
			lat := make([]time.Duration, 0, 1<<16)
			for {
				t := time.Now()
				if t.After(stop) {
					break
				}
				if _, err := c.ModelInfer(context.Background(), req); err != nil {
					failures.Add(1)
					continue
				}
				lat = append(lat, time.Since(t))
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		}(clients[w%len(clients)])
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(all)
	pct := func(p float64) int64 {
		if len(all) == 0 {
			return 0
		}
		return all[min(len(all)-1, int(p*float64(len(all))))].Microseconds()
	}
	f := figures{Requests: int64(len(all)), DurationUS: elapsed.Microseconds(),
		RPS: float64(len(all)) / elapsed.Seconds(), P50US: pct(0.5), P90US: pct(0.9), P99US: pct(0.99)}
	if len(all) > 0 {
		f.MaxUS = all[len(all)-1].Microseconds()
	}
	f.Errors.Status = failures.Load()
	return f
}
