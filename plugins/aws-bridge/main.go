// ccm-provider-aws: k8s.io/cloud-provider-aws's provider (pkg/providers/v1,
// registered as "aws"), unmodified, served through the bridge. It is built
// from its cloud config file, named by $CLOUD_CONFIG, before the host's
// Configure; docs/providers/aws.md says how to run it.
//
// Like upstream's aws-cloud-controller-manager (cmd/aws-cloud-controller-
// manager/main.go) it also has the tagging controller ("tagging" in the
// host's --controllers, off unless listed) with its flags (--tags,
// --resources, ...): declared to the host, which passes them on from its
// own command line; the controller runs in this process while the host leads.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/bridge"
	"github.com/spf13/pflag"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider-aws/pkg/controllers/options"
	"k8s.io/cloud-provider-aws/pkg/controllers/tagging"
	_ "k8s.io/cloud-provider-aws/pkg/providers/v1"
)

func main() {
	path := os.Getenv("CLOUD_CONFIG")
	cloud, err := cloudprovider.InitCloudProvider("aws", path)
	if err != nil || cloud == nil {
		fmt.Fprintf(os.Stderr, "cannot build the aws cloud provider from CLOUD_CONFIG=%q: %v\n", path, err)
		os.Exit(1)
	}
	var taggingOpts options.TaggingControllerOptions
	flags := pflag.NewFlagSet("aws", pflag.ContinueOnError)
	taggingOpts.AddFlags(flags)
	bridge.Main(cloud, bridge.Options{
		VendorVersion: "k8s.io/cloud-provider-aws " + bridge.ModuleVersion("k8s.io/cloud-provider-aws"),
		Configure:     bridge.CloudConfigFile(path),
		Flags:         flags,
		Schema:        awsSchema(), // schema.go: upstream's annotations, so the host catches a misspelled one
		Controllers: map[string]bridge.Controller{
			tagging.TaggingControllerKey: func(ctx context.Context, c bridge.ControllerContext) error {
				// As upstream's tagging controller wrapper, which exits the process on invalid flags.
				if err := taggingOpts.Validate(); err != nil {
					return fmt.Errorf("tagging controller flags: %w", err)
				}
				client, err := c.ClientBuilder.Client(tagging.TaggingControllerClientName)
				if err != nil {
					return err
				}
				tc, err := tagging.NewTaggingController(c.Informers.Core().V1().Nodes(), client, c.Cloud, c.NodeMonitorPeriod,
					taggingOpts.Tags, taggingOpts.Resources, taggingOpts.RateLimit, taggingOpts.BurstLimit, taggingOpts.WorkerCount, taggingOpts.BatchingEnabled)
				if err != nil {
					return err
				}
				go tc.Run(ctx)
				return nil
			},
		},
	})
}
