//go:build cri_ctx

package main

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace/noop"
	internalapi "k8s.io/cri-api/pkg/apis"
	remote "k8s.io/cri-client/pkg"
)

// newRuntimeService connects to the fake runtime with the cri-client API of
// Kubernetes v1.37 and later (a context first, a streaming switch last;
// streaming lists stay off as the feature gate's default).
func newRuntimeService(endpoint string, timeout time.Duration) (internalapi.RuntimeService, error) {
	return remote.NewRemoteRuntimeService(context.Background(), endpoint, timeout, noop.NewTracerProvider(), false)
}
