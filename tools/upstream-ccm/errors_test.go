package main

import (
	"errors"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	cloudprovider "k8s.io/cloud-provider"
)

func withInfo(code codes.Code, reason string) error {
	st, err := status.New(code, "x").WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: errorDomain})
	if err != nil {
		panic(err)
	}
	return st.Err()
}

func TestCloudErrorMapsTheProtocolOntoUpstreamSentinels(t *testing.T) {
	plain := status.Error(codes.Unavailable, "down")
	otherDomain, _ := status.New(codes.NotFound, "x").WithDetails(&errdetails.ErrorInfo{Reason: reasonInstanceNotFound, Domain: "elsewhere"})
	for _, c := range []struct {
		name string
		in   error
		want error
	}{
		{"nil stays nil", nil, nil},
		{"INSTANCE_NOT_FOUND", withInfo(codes.NotFound, reasonInstanceNotFound), cloudprovider.InstanceNotFound},
		{"IMPLEMENTED_ELSEWHERE", withInfo(codes.FailedPrecondition, reasonImplementedElsewhere), cloudprovider.ImplementedElsewhere},
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
