// Command apiprobe runs in a pod on the real node and asks the API server, as the pod's service
// account and through the kubernetes Service (rest.InClusterConfig), who it is; it prints the
// answer and writes it as the container's termination message, so the test needs no exec.
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func main() {
	msg, err := whoami()
	if err != nil {
		msg = "apiprobe: " + err.Error()
	}
	fmt.Println(msg)
	_ = os.WriteFile("/dev/termination-log", []byte(msg), 0o644)
	if err != nil {
		os.Exit(1)
	}
}

func whoami() (string, error) {
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return "", err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("self subject review at %s: %w", cfg.Host, err)
	}
	return fmt.Sprintf("authenticated as %s at %s", r.Status.UserInfo.Username, cfg.Host), nil
}
