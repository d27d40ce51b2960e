package bridge

import (
	"context"
	"errors"

	ccmsdk "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"
)

// ToStatus maps an error of a cloudprovider.Interface method onto the
// protocol's error model, comparing the way upstream's controllers compare:
//
//	nil                                  → nil
//	a gRPC status error                  → unchanged (the provider chose its answer, e.g. ccmsdk.RateLimited)
//	== cloudprovider.InstanceNotFound    → NOT_FOUND, ErrorInfo INSTANCE_NOT_FOUND
//	== cloudprovider.ImplementedElsewhere→ FAILED_PRECONDITION, ErrorInfo IMPLEMENTED_ELSEWHERE
//	errors.Is cloudprovider.NotImplemented → UNIMPLEMENTED
//	== cloudprovider.DiskNotFound        → NOT_FOUND
//	errors.As *api.RetryError            → UNAVAILABLE with RetryInfo = RetryAfter() (retry the same request after that delay)
//	context.Canceled / DeadlineExceeded  → CANCELLED / DEADLINE_EXCEEDED
//	anything else                        → INTERNAL, ErrorInfo CLOUD_API_ERROR
//
// InstanceNotFound and ImplementedElsewhere match only unwrapped, as
// upstream's node lifecycle and service controllers test them with ==: a
// wrapped InstanceNotFound is an error there, never "delete the Node", and
// so it is here. The message is always err.Error().
func ToStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	msg := err.Error()
	var retry *api.RetryError
	switch {
	case err == cloudprovider.InstanceNotFound:
		return ccmsdk.InstanceNotFound(msg)
	case err == cloudprovider.ImplementedElsewhere:
		return ccmsdk.ImplementedElsewhere(msg)
	case errors.Is(err, cloudprovider.NotImplemented):
		return ccmsdk.NotImplemented(msg)
	case err == cloudprovider.DiskNotFound:
		return ccmsdk.NotFound(msg)
	case errors.As(err, &retry):
		return ccmsdk.Retry(msg, retry.RetryAfter())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, msg)
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, msg)
	}
	return ccmsdk.StatusError(codes.Internal, msg, ccmsdk.ReasonCloudAPIError, nil, 0)
}

// FromStatus is the opposite direction, for a cloudprovider.Interface that
// forwards to a provider (tools/upstream-ccm): it returns the sentinel
// errors upstream's controllers compare against.
//
//	nil                                   → nil
//	ErrorInfo INSTANCE_NOT_FOUND          → cloudprovider.InstanceNotFound
//	ErrorInfo IMPLEMENTED_ELSEWHERE       → cloudprovider.ImplementedElsewhere
//	UNIMPLEMENTED                         → cloudprovider.NotImplemented
//	a RetryInfo delay (any other code)    → *api.RetryError with the status message and that delay
//	anything else                         → err unchanged
func FromStatus(err error) error {
	if err == nil {
		return nil
	}
	switch ccmsdk.ErrorReason(err) {
	case ccmsdk.ReasonInstanceNotFound:
		return cloudprovider.InstanceNotFound
	case ccmsdk.ReasonImplementedElsewhere:
		return cloudprovider.ImplementedElsewhere
	}
	if status.Code(err) == codes.Unimplemented {
		return cloudprovider.NotImplemented
	}
	if d, ok := ccmsdk.RetryAfter(err); ok {
		return api.NewRetryError(status.Convert(err).Message(), d)
	}
	return err
}
