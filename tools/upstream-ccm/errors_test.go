package main

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"

	ccmsdk "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go"
)

func withInfo(code codes.Code, reason string) error {
	st, err := status.New(code, "x").WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: ccmsdk.ErrorDomain})
	if err != nil {
		panic(err)
	}
	return st.Err()
}

func TestCloudErrorMapsTheProtocolOntoUpstreamSentinels(t *testing.T) {
	plain := status.Error(codes.Unavailable, "down")
	otherDomain, _ := status.New(codes.NotFound, "x").WithDetails(&errdetails.ErrorInfo{Reason: ccmsdk.ReasonInstanceNotFound, Domain: "elsewhere"})
	for _, c := range []struct {
		name string
		in   error
		want error
	}{
		{"nil stays nil", nil, nil},
		{"INSTANCE_NOT_FOUND", withInfo(codes.NotFound, ccmsdk.ReasonInstanceNotFound), cloudprovider.InstanceNotFound},
		{"IMPLEMENTED_ELSEWHERE", withInfo(codes.FailedPrecondition, ccmsdk.ReasonImplementedElsewhere), cloudprovider.ImplementedElsewhere},
		{"UNIMPLEMENTED", status.Error(codes.Unimplemented, "no"), cloudprovider.NotImplemented},
		{"other errors pass through", plain, plain},
		{"a reason from another domain is not ours", otherDomain.Err(), nil},
	} {
		got := cloudError(c.in)
		if c.want == nil && c.in != nil {
			if got != c.in {
				t.Errorf("%s: got %v, want the error unchanged", c.name, got)
			}
			continue
		}
		if !errors.Is(got, c.want) && got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

// A RetryInfo delay reaches upstream's service controller as the
// *api.RetryError it requeues after, not as an error with exponential backoff.
func TestCloudErrorTurnsRetryInfoIntoRetryError(t *testing.T) {
	var re *api.RetryError
	if got := cloudError(ccmsdk.Retry("address pending", 5*time.Second)); !errors.As(got, &re) || re.RetryAfter() != 5*time.Second {
		t.Errorf("got %#v", got)
	}
}
