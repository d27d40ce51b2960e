package bridge

import (
	"bytes"
	"context"
	"fmt"
	"os"
)

// CloudConfigFile is an Options.Configure for a cloud built from the config
// file at path before the host's Configure (as cloudprovider.InitCloudProvider
// does; the cloud's interfaces are the capabilities the host reads first, so
// the host's --cloud-config bytes come too late to build it). The cloud runs
// on the file; Configure only checks that the host agrees:
//
//   - no --cloud-config on the host (empty bytes): fine;
//   - the same bytes as the file: fine;
//   - other bytes: a warning (which the host logs) naming both, since the
//     cloud does not run on what the host's operator passed.
//
// path "" (no file: the cloud built itself without one) warns for any bytes.
// The file is read again on every Configure; an unreadable file is a warning
// too, not an error: the cloud was built already.
func CloudConfigFile(path string) func(ctx context.Context, cloudConfig []byte) ([]string, error) {
	return func(_ context.Context, cloudConfig []byte) ([]string, error) {
		if len(cloudConfig) == 0 {
			return nil, nil
		}
		if path == "" {
			return []string{"the cloud config from the host's --cloud-config is ignored: this provider was built without a config file"}, nil
		}
		own, err := os.ReadFile(path)
		if err != nil {
			return []string{fmt.Sprintf("the cloud runs on the config file %s, which cannot be read again to compare it with the host's --cloud-config: %v", path, err)}, nil
		}
		if !bytes.Equal(own, cloudConfig) {
			return []string{fmt.Sprintf("the host's --cloud-config (%d bytes) differs from the config file %s (%d bytes) the cloud was built from and runs on; give both the same file", len(cloudConfig), path, len(own))}, nil
		}
		return nil, nil
	}
}
