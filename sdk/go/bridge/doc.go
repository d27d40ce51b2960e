// Package bridge runs an existing Go cloud provider, written against
// k8s.io/cloud-provider's cloudprovider.Interface, as a provider plugin of
// the grpc cloud-controller-manager, unchanged:
//
//	func main() {
//		cloud, err := cloudprovider.InitCloudProvider("mycloud", os.Getenv("MYCLOUD_CONFIG"))
//		if err != nil {
//			fmt.Fprintln(os.Stderr, err)
//			os.Exit(1)
//		}
//		bridge.Main(cloud, bridge.Options{VendorVersion: "1.2.3"})
//	}
//
// [Serve] does the launch contract through the Go SDK (ccmsdk.Serve, exec
// and sidecar mode) and serves every protocol service the cloud supports,
// with the capabilities of its (impl, ok) answers (see [Provider]).
// Requests are turned back into the *v1.Node and *v1.Service upstream's
// controllers would have passed ([NodeFromRef], [ServiceFromRef] list what
// the protocol does not carry), and errors into the protocol's model
// ([ToStatus]; [FromStatus] is the opposite direction). The cloud's
// Initialize is called on the first Configure with [ClientBuilderFromEnv].
//
// This module lives in the sdk/go/bridge directory of the repository and is
// tagged sdk/go/bridge/vX.Y.Z; it requires k8s.io/cloud-provider at the
// version of [UpstreamVersion] (and the matching k8s.io/api and client-go),
// so that the SDK module (sdk/go) itself stays free of Kubernetes
// dependencies. See README.md.
package bridge
