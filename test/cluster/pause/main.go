// Command pause is the sandbox image of the test control plane's real nodes: the process that
// holds a pod's namespaces while its containers come and go. Nothing can be pulled there, so the
// image is built from this program (a static binary in a FROM-scratch image) at each start. It
// sleeps until SIGTERM or SIGINT ends it, and reaps the zombies that reach it as the pod's init.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			os.Exit(0)
		}
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
