// Package ccmsdk serves a cloud provider written in Go to the grpc
// cloud-controller-manager (the host). A provider implements the RPCs its
// cloud has; [Serve] does everything the launch contract of docs/protocol.md
// asks for: the magic cookie check, protocol version negotiation, the unix
// socket (0600, a stale one removed), the one handshake line on stdout (and
// nothing else on stdout), grpc.health.v1, IdentityService (capabilities
// derived from the methods present), LifecycleService (Configure, Probe
// readiness, Shutdown), exit on stdin EOF, SIGTERM/SIGINT with a bounded
// graceful stop, and sidecar mode (CCM_PROVIDER_ENDPOINT or --endpoint).
//
//	import (
//		ccmsdk "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go"
//		pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
//	)
//
//	type instances struct{ /* your cloud client */ }
//
//	func (i *instances) InstanceExists(ctx context.Context, req *pb.InstanceExistsRequest) (*pb.InstanceExistsResponse, error) { ... }
//
//	type provider struct{ instances *instances }
//
//	func (p *provider) Info() ccmsdk.Info { return ccmsdk.Info{Name: "example.com", VendorVersion: "1.0.0", ProviderName: "example"} }
//	func (p *provider) Instances() any  { return p.instances }
//
//	func main() { ccmsdk.Main(&provider{instances: &instances{}}, ccmsdk.Options{}) }
//
// The generated code of proto/ccm/provider/v1 is the package
// github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1.
//
// This module lives in the sdk/go directory of the repository; its versions
// are tagged sdk/go/vX.Y.Z (go get
// github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go@v0.1.0 resolves the
// tag sdk/go/v0.1.0). See README.md.
package ccmsdk
