// The cloud's own error helper and the test hooks' simulated throttle.
package main

import (
	"context"
	"sync"
	"time"

	ccmsdk "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go"
	"google.golang.org/grpc"
)

func instanceNotFound(what string) error { return ccmsdk.InstanceNotFound("no instance " + what) }

// throttle is the test hook's simulated cloud throttle (TestHooksService.SetThrottle).
var throttle struct {
	sync.Mutex
	enabled bool
	delay   time.Duration
}

// throttleInterceptor fails cloud-service calls while the throttle is on:
// RESOURCE_EXHAUSTED, reason RATE_LIMITED, RetryInfo. Identity, Lifecycle,
// health and the test hooks are never throttled.
func throttleInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	throttle.Lock()
	on, delay := throttle.enabled, throttle.delay
	throttle.Unlock()
	if on && ccmsdk.IsCloudMethod(info.FullMethod) {
		return nil, ccmsdk.RateLimited("cloud API rate limit exceeded", delay)
	}
	return handler(ctx, req)
}
