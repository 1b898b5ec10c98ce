package train

import (
	"context"
	"fmt"
	"net"
	"time"
)

// trackerIP resolves the tracker's host name to the address every rank hands libxgboost, retrying
// until the name resolves or timeout passes. libxgboost 1.7 resolves DMLC_TRACKER_URI once and,
// when that fails, does not fail: collective::MakeSockAddress returns an empty address, which the
// rank then dials, and the rendezvous breaks with "Failed to call `send`: Broken pipe". A rank can
// start before its tracker's name resolves: Kubeflow Trainer v2 names rank 0's own pod
// (<job>-node-0-0.<job>, a record of the JobSet's headless Service), whose DNS record exists only
// once the pod has an IP and the endpoint slice lists it.
func trackerIP(ctx context.Context, host string, timeout time.Duration) (string, error) {
	if ip := net.ParseIP(host); ip != nil {
		return host, nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ips, err := net.DefaultResolver.LookupIP(ctx, "ip", host)
		if err == nil && len(ips) > 0 {
			for _, ip := range ips {
				if ip.To4() != nil {
					return ip.String(), nil
				}
			}
			return ips[0].String(), nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("tracker host %s did not resolve within %s: %v", host, timeout, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
