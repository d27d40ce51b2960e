package ccmsdk

import (
	"fmt"
	"regexp"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"
)

// ErrorDomain is the google.rpc.ErrorInfo domain of the protocol's reasons.
const ErrorDomain = "ccm.provider.v1"

// ErrorInfo reasons; see the header of proto/ccm/provider/v1/common.proto.
const (
	ReasonInstanceNotFound     = "INSTANCE_NOT_FOUND"
	ReasonRateLimited          = "RATE_LIMITED"
	ReasonQuotaExceeded        = "QUOTA_EXCEEDED"
	ReasonImplementedElsewhere = "IMPLEMENTED_ELSEWHERE"
	ReasonCloudAPIError        = "CLOUD_API_ERROR"
	ReasonInUse                = "IN_USE"
	ReasonNotConfigured        = "NOT_CONFIGURED"
	// ReasonDeferred (protocol 1.1): "not now"; see Deferred.
	ReasonDeferred = "DEFERRED"
)

// DeferredReasonKey is the ErrorInfo metadata key of a DEFERRED answer's own reason.
const DeferredReasonKey = "reason"

// deferredReasonPattern: a Kubernetes condition reason (CamelCase), at most 64 characters.
var deferredReasonPattern = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]{0,62}[A-Za-z0-9_])?$`)

// StatusError builds a status error with code and msg, a
// google.rpc.ErrorInfo (domain ccm.provider.v1) when reason is not empty,
// and a google.rpc.RetryInfo when retryAfter > 0 (the host keeps it within
// 1 s .. 1 h).
func StatusError(code codes.Code, msg, reason string, metadata map[string]string, retryAfter time.Duration) error {
	st := status.New(code, msg)
	var details []protoadapt.MessageV1
	if reason != "" {
		details = append(details, &errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain, Metadata: metadata})
	}
	if retryAfter > 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(retryAfter)})
	}
	if len(details) == 0 {
		return st.Err()
	}
	withDetails, err := st.WithDetails(details...)
	if err != nil {
		return st.Err()
	}
	return withDetails.Err()
}

// InstanceNotFound: the instance does not exist (NOT_FOUND, INSTANCE_NOT_FOUND).
func InstanceNotFound(msg string) error {
	return StatusError(codes.NotFound, msg, ReasonInstanceNotFound, nil, 0)
}

// NotFound: an object other than an instance does not exist (NOT_FOUND).
func NotFound(msg string) error { return status.Error(codes.NotFound, msg) }

// AlreadyExists (ALREADY_EXISTS).
func AlreadyExists(msg string) error { return status.Error(codes.AlreadyExists, msg) }

// InvalidArgument: the request (or the cloud config) is wrong (INVALID_ARGUMENT).
func InvalidArgument(msg string) error { return status.Error(codes.InvalidArgument, msg) }

// RateLimited: the cloud API throttled us; retry after retryAfter
// (RESOURCE_EXHAUSTED, RATE_LIMITED, RetryInfo; upstream RetryError).
func RateLimited(msg string, retryAfter time.Duration) error {
	return StatusError(codes.ResourceExhausted, msg, ReasonRateLimited, nil, retryAfter)
}

// Retry: not done yet (e.g. an address is still being allocated); retry after the delay (UNAVAILABLE, RetryInfo).
func Retry(msg string, retryAfter time.Duration) error {
	return StatusError(codes.Unavailable, msg, "", nil, retryAfter)
}

// QuotaExceeded: an account quota is exhausted (RESOURCE_EXHAUSTED, QUOTA_EXCEEDED).
func QuotaExceeded(msg string) error {
	return StatusError(codes.ResourceExhausted, msg, ReasonQuotaExceeded, nil, 0)
}

// ImplementedElsewhere: another implementation owns this object
// (FAILED_PRECONDITION, IMPLEMENTED_ELSEWHERE; upstream ImplementedElsewhere).
func ImplementedElsewhere(msg string) error {
	if msg == "" {
		msg = "implemented by alternate to cloud provider"
	}
	return StatusError(codes.FailedPrecondition, msg, ReasonImplementedElsewhere, nil, 0)
}

// InUse: the object is still in use, e.g. a volume is attached (FAILED_PRECONDITION, IN_USE).
func InUse(msg string) error {
	return StatusError(codes.FailedPrecondition, msg, ReasonInUse, nil, 0)
}

// Deferred (protocol 1.1): "not now". The request is fine but cannot be done
// yet (a quota, a prerequisite that does not exist yet, eventual
// consistency). reason is a CamelCase word saying why (e.g. "QuotaExhausted";
// it becomes the Service's LoadBalancerServing condition reason and a metric
// label, so keep the set small); retryAfter the earliest retry (the host
// keeps it within 1 s .. 5 min). The host records it in a condition and
// retries without Warning events. On the wire: UNAVAILABLE, ErrorInfo
// DEFERRED with metadata {reason}, RetryInfo; a 1.0 host reads it as a retry
// after the delay. Panics on a reason that is not CamelCase (a programming
// error, as regexp.MustCompile).
func Deferred(reason, msg string, retryAfter time.Duration) error {
	if !deferredReasonPattern.MatchString(reason) {
		panic(fmt.Sprintf("ccmsdk.Deferred: reason %q is not a CamelCase word of at most 64 characters", reason))
	}
	return StatusError(codes.Unavailable, msg, ReasonDeferred, map[string]string{DeferredReasonKey: reason}, retryAfter)
}

// DeferredReason is the provider's own reason of a DEFERRED status error, if it is one.
func DeferredReason(err error) (string, bool) {
	st, ok := status.FromError(err)
	if !ok {
		return "", false
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.Domain == ErrorDomain && info.Reason == ReasonDeferred {
			return info.Metadata[DeferredReasonKey], true
		}
	}
	return "", false
}

// CloudUnavailable: the cloud is unreachable or failed transiently; the
// operation may be in progress (UNAVAILABLE, CLOUD_API_ERROR).
func CloudUnavailable(msg string) error {
	return StatusError(codes.Unavailable, msg, ReasonCloudAPIError, nil, 0)
}

// NotConfigured is what the SDK answers every cloud call with until the
// first successful Configure (FAILED_PRECONDITION, NOT_CONFIGURED).
func NotConfigured() error {
	return StatusError(codes.FailedPrecondition, "the provider has not been configured yet (no Configure since it started); the host configures it and retries", ReasonNotConfigured, nil, 0)
}

// NotImplemented (UNIMPLEMENTED).
func NotImplemented(msg string) error {
	if msg == "" {
		msg = "not implemented by this provider"
	}
	return status.Error(codes.Unimplemented, msg)
}

// StatusProto is the google.rpc.Status of err, for the per-item errors of
// batch responses. An error that is not a gRPC status becomes INTERNAL.
func StatusProto(err error) *spb.Status {
	if err == nil {
		return nil
	}
	if st, ok := status.FromError(err); ok {
		return st.Proto()
	}
	return status.New(codes.Internal, err.Error()).Proto()
}

// ErrorReason is the ErrorInfo reason of a status error in ErrorDomain, or "".
func ErrorReason(err error) string {
	st, ok := status.FromError(err)
	if !ok {
		return ""
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.Domain == ErrorDomain {
			return info.Reason
		}
	}
	return ""
}

// RetryAfter is the RetryInfo delay of a status error, if it carries one.
func RetryAfter(err error) (time.Duration, bool) {
	st, ok := status.FromError(err)
	if !ok {
		return 0, false
	}
	for _, d := range st.Details() {
		if r, ok := d.(*errdetails.RetryInfo); ok {
			return r.GetRetryDelay().AsDuration(), true
		}
	}
	return 0, false
}
