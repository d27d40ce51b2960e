package bridge

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	ccmsdk "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"
)

func TestToStatus(t *testing.T) {
	own := ccmsdk.RateLimited("slow down", 3*time.Second)
	cases := []struct {
		name   string
		err    error
		code   codes.Code
		reason string
		retry  time.Duration // 0: no RetryInfo
		msg    string
	}{
		{"instance not found", cloudprovider.InstanceNotFound, codes.NotFound, ccmsdk.ReasonInstanceNotFound, 0, "instance not found"},
		{"implemented elsewhere", cloudprovider.ImplementedElsewhere, codes.FailedPrecondition, ccmsdk.ReasonImplementedElsewhere, 0, "implemented by alternate to cloud provider"},
		{"not implemented", cloudprovider.NotImplemented, codes.Unimplemented, "", 0, "unimplemented"},
		{"wrapped not implemented (upstream tests it with errors.Is)", fmt.Errorf("zones: %w", cloudprovider.NotImplemented), codes.Unimplemented, "", 0, "zones: unimplemented"},
		{"disk not found", cloudprovider.DiskNotFound, codes.NotFound, "", 0, "disk is not found"},
		{"retry error", api.NewRetryError("address pending", 7*time.Second), codes.Unavailable, "", 7 * time.Second, "address pending"},
		{"wrapped retry error (upstream uses errors.As)", fmt.Errorf("ensure: %w", api.NewRetryError("busy", time.Second)), codes.Unavailable, "", time.Second, "ensure: busy"},
		{"wrapped instance not found stays an error, as upstream compares with ==", fmt.Errorf("lookup: %w", cloudprovider.InstanceNotFound), codes.Internal, ccmsdk.ReasonCloudAPIError, 0, "lookup: instance not found"},
		{"wrapped implemented elsewhere likewise", fmt.Errorf("x: %w", cloudprovider.ImplementedElsewhere), codes.Internal, ccmsdk.ReasonCloudAPIError, 0, "x: implemented by alternate to cloud provider"},
		{"cancelled", context.Canceled, codes.Canceled, "", 0, "context canceled"},
		{"deadline", fmt.Errorf("call: %w", context.DeadlineExceeded), codes.DeadlineExceeded, "", 0, "call: context deadline exceeded"},
		{"any other error", errors.New("quota API said 500"), codes.Internal, ccmsdk.ReasonCloudAPIError, 0, "quota API said 500"},
		{"a status error passes unchanged", own, codes.ResourceExhausted, ccmsdk.ReasonRateLimited, 3 * time.Second, "slow down"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ToStatus(c.err)
			st, ok := status.FromError(got)
			if !ok {
				t.Fatalf("ToStatus(%v) = %v, not a status error", c.err, got)
			}
			if st.Code() != c.code || st.Message() != c.msg {
				t.Errorf("code %v message %q; want %v %q", st.Code(), st.Message(), c.code, c.msg)
			}
			if r := ccmsdk.ErrorReason(got); r != c.reason {
				t.Errorf("reason %q; want %q", r, c.reason)
			}
			d, has := ccmsdk.RetryAfter(got)
			if has != (c.retry > 0) || d != c.retry {
				t.Errorf("RetryInfo %v (%v); want %v", d, has, c.retry)
			}
		})
	}
	if ToStatus(nil) != nil {
		t.Error("ToStatus(nil) is not nil")
	}
}

func TestFromStatus(t *testing.T) {
	plain := status.Error(codes.Internal, "boom")
	cases := []struct {
		name string
		err  error
		want func(error) bool
	}{
		{"INSTANCE_NOT_FOUND", ccmsdk.InstanceNotFound("gone"), func(e error) bool { return e == cloudprovider.InstanceNotFound }},
		{"IMPLEMENTED_ELSEWHERE", ccmsdk.ImplementedElsewhere(""), func(e error) bool { return e == cloudprovider.ImplementedElsewhere }},
		{"UNIMPLEMENTED", ccmsdk.NotImplemented(""), func(e error) bool { return e == cloudprovider.NotImplemented }},
		{"RetryInfo (UNAVAILABLE)", ccmsdk.Retry("pending", 4*time.Second), func(e error) bool {
			var re *api.RetryError
			return errors.As(e, &re) && re.RetryAfter() == 4*time.Second && re.Error() == "pending"
		}},
		{"RetryInfo (RATE_LIMITED)", ccmsdk.RateLimited("throttled", 2*time.Second), func(e error) bool {
			var re *api.RetryError
			return errors.As(e, &re) && re.RetryAfter() == 2*time.Second
		}},
		{"other errors unchanged", plain, func(e error) bool { return e == plain }},
		{"nil", nil, func(e error) bool { return e == nil }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := FromStatus(c.err); !c.want(got) {
				t.Errorf("FromStatus(%v) = %#v", c.err, got)
			}
		})
	}
}

// The two directions undo each other for every error upstream's
// controllers tell apart.
func TestErrorRoundTrip(t *testing.T) {
	for _, e := range []error{cloudprovider.InstanceNotFound, cloudprovider.ImplementedElsewhere, cloudprovider.NotImplemented} {
		if got := FromStatus(ToStatus(e)); got != e {
			t.Errorf("%v came back as %v", e, got)
		}
	}
	var re *api.RetryError
	if got := FromStatus(ToStatus(api.NewRetryError("later", 9*time.Second))); !errors.As(got, &re) || re.RetryAfter() != 9*time.Second {
		t.Errorf("RetryError came back as %#v", got)
	}
}
