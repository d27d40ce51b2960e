// Errors in the protocol's error model: a canonical code, plus a
// google.rpc.ErrorInfo reason (domain ccm.provider.v1) where the code alone
// is ambiguous, plus a google.rpc.RetryInfo for "retry after this" (the host
// keeps it within 1 s .. 1 h).
package main

import (
	"context"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

const errorDomain = "ccm.provider.v1"

// Error reasons of proto/ccm/provider/v1/common.proto.
const (
	reasonInstanceNotFound = "INSTANCE_NOT_FOUND"
	reasonRateLimited      = "RATE_LIMITED"
	reasonQuotaExceeded    = "QUOTA_EXCEEDED"
	reasonInUse            = "IN_USE"
)

// withReason is a status error carrying an ErrorInfo.
func withReason(code codes.Code, reason, msg string) error {
	st, err := status.New(code, msg).WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: errorDomain})
	if err != nil {
		return status.Error(code, msg)
	}
	return st.Err()
}

func instanceNotFound(what string) error {
	return withReason(codes.NotFound, reasonInstanceNotFound, "no instance "+what)
}

func invalid(msg string) error  { return status.Error(codes.InvalidArgument, msg) }
func notFound(msg string) error { return status.Error(codes.NotFound, msg) }

// statusProto is the google.rpc.Status of an error, for per-item batch results.
func statusProto(err error) *spb.Status {
	return status.Convert(err).Proto()
}

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
	if on && cloudMethod(info.FullMethod) {
		st, err := status.New(codes.ResourceExhausted, "cloud API rate limit exceeded").WithDetails(
			&errdetails.ErrorInfo{Reason: reasonRateLimited, Domain: errorDomain},
			&errdetails.RetryInfo{RetryDelay: durationpb.New(delay)},
		)
		if err != nil {
			return nil, status.Error(codes.ResourceExhausted, "cloud API rate limit exceeded")
		}
		return nil, st.Err()
	}
	return handler(ctx, req)
}
