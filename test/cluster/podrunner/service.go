package podrunner

import (
	"context"
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// ServiceAddr is where a client outside the pod network reaches port of
// a Service: there is no kube-proxy here and every pod is on the host's
// network, so it is 127.0.0.1 and the Service's targetPort (a number, or
// a containerPort name looked up in the pods the Service selects).
func ServiceAddr(ctx context.Context, kube kubernetes.Interface, namespace, service string, port int32) (string, error) {
	svc, err := kube.CoreV1().Services(namespace).Get(ctx, service, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("service %s/%s: %w", namespace, service, err)
	}
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == port {
			sp = &svc.Spec.Ports[i]
		}
	}
	if sp == nil {
		return "", fmt.Errorf("service %s/%s has no port %d", namespace, service, port)
	}
	target := sp.TargetPort
	switch {
	case target.Type == intstr.Int && target.IntVal == 0:
		return net.JoinHostPort(loopback, strconv.Itoa(int(port))), nil
	case target.Type == intstr.Int:
		return net.JoinHostPort(loopback, strconv.Itoa(int(target.IntVal))), nil
	}
	pods, err := kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(svc.Spec.Selector).String(),
	})
	if err != nil {
		return "", fmt.Errorf("service %s/%s: pods: %w", namespace, service, err)
	}
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == target.StrVal {
					return net.JoinHostPort(loopback, strconv.Itoa(int(cp.ContainerPort))), nil
				}
			}
		}
	}
	return "", fmt.Errorf("service %s/%s port %d: no selected pod has a containerPort named %q", namespace, service, port, target.StrVal)
}
