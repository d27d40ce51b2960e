package main

import (
	"context"
	"errors"
	"time"

	ccmsdk "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go"
	"github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/bridge"
)

// reconfigureTimeout bounds configuring a provider that restarted under us.
const reconfigureTimeout = 30 * time.Second

// call runs one RPC; when the provider answers NOT_CONFIGURED (it restarted
// behind the socket) it configures it again and retries once, as our host does.
func call[T any](ctx context.Context, g *grpcCloud, rpc func() (T, error)) (T, error) {
	res, err := rpc()
	if err == nil || ccmsdk.ErrorReason(err) != ccmsdk.ReasonNotConfigured {
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

// cloudError maps the protocol's error model onto the errors upstream's
// controllers compare against (bridge.FromStatus: the sentinels, and a
// RetryInfo as an *api.RetryError); other errors pass through.
func cloudError(err error) error { return bridge.FromStatus(err) }
