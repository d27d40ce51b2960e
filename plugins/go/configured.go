// The protocol's rule for a provider that has not been configured yet, and
// the per-process instance id a sidecar reports.
package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

const reasonNotConfigured = "NOT_CONFIGURED"

// configured turns true with the first successful Configure. Until then
// cloud calls answer FAILED_PRECONDITION/NOT_CONFIGURED and Probe answers
// ready=false, so a restarted provider never answers from an empty state.
var configured atomic.Bool

// cloudMethod: a call of a cloud service (not Identity, Lifecycle, health or the test hooks).
func cloudMethod(fullMethod string) bool {
	return strings.HasPrefix(fullMethod, "/ccm.provider.v1.") &&
		!strings.HasPrefix(fullMethod, "/ccm.provider.v1.IdentityService/") &&
		!strings.HasPrefix(fullMethod, "/ccm.provider.v1.LifecycleService/")
}

func notConfiguredInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if cloudMethod(info.FullMethod) && !configured.Load() {
		return nil, withReason(codes.FailedPrecondition, reasonNotConfigured, "the provider has not been configured yet (no Configure since it started)")
	}
	return handler(ctx, req)
}

// randomInstanceID identifies this process in sidecar mode, where the host
// passes no launch nonce: a random UUID (version 4).
func randomInstanceID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		fail("cannot read random bytes for the instance id: %v", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
