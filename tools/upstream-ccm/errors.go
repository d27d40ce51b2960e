package main

import (
	"context"
	"errors"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	cloudprovider "k8s.io/cloud-provider"
)

// Error reasons of proto/ccm/provider/v1/common.proto this forwarder reads.
const (
	errorDomain                = "ccm.provider.v1"
	reasonInstanceNotFound     = "INSTANCE_NOT_FOUND"
	reasonImplementedElsewhere = "IMPLEMENTED_ELSEWHERE"
	reasonNotConfigured        = "NOT_CONFIGURED"
	// reconfigureTimeout bounds configuring a provider that restarted under us.
	reconfigureTimeout = 30 * time.Second
)

// reason is the ErrorInfo reason of a provider error, or "".
func reason(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == errorDomain {
			return info.GetReason()
		}
	}
	return ""
}

// call runs one RPC; when the provider answers NOT_CONFIGURED (it restarted
// behind the socket) it configures it again and retries once, as our host does.
func call[T any](ctx context.Context, g *grpcCloud, rpc func() (T, error)) (T, error) {
	res, err := rpc()
	if err == nil || reason(err) != reasonNotConfigured {
		return res, cloudError(err)
	}
	rctx, cancel := context.WithTimeout(ctx, reconfigureTimeout)
	defer cancel()
	if cerr := g.reconfigure(rctx); cerr != nil {
		return res, errors.Join(cloudError(err), cerr)
	}
	res, err = rpc()
	return res, cloudError(err)
}

// cloudError maps the protocol's error model onto the sentinel errors the
// upstream controllers compare against; other errors pass through.
func cloudError(err error) error {
	if err == nil {
		return nil
	}
	switch {
	case reason(err) == reasonInstanceNotFound:
		return cloudprovider.InstanceNotFound
	case reason(err) == reasonImplementedElsewhere:
		return cloudprovider.ImplementedElsewhere
	case status.Code(err) == codes.Unimplemented:
		return cloudprovider.NotImplemented
	}
	return err
}
