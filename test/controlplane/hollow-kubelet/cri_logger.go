//go:build !cri_ctx

package main

import (
	"time"

	"go.opentelemetry.io/otel/trace/noop"
	internalapi "k8s.io/cri-api/pkg/apis"
	remote "k8s.io/cri-client/pkg"
	"k8s.io/klog/v2"
)

// newRuntimeService connects to the fake runtime with the cri-client API up
// to Kubernetes v1.36 (a logger argument, no context). build-binaries.sh
// picks this file or cri_ctx.go by the signature the module has.
func newRuntimeService(endpoint string, timeout time.Duration) (internalapi.RuntimeService, error) {
	logger := klog.Background()
	return remote.NewRemoteRuntimeService(endpoint, timeout, noop.NewTracerProvider(), &logger)
}
