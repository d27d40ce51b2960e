package main

import (
	"encoding/json"
	"fmt"
	"os"

	"k8s.io/cloud-provider/fake"
)

// EnvRecordFile names the file the fake writes the last EnsureLoadBalancer
// call to, for tests: what a provider written against k8s.io/cloud-provider
// receives through the bridge (test/integration/providers/host-scenarios.test.ts
// checks the fields the host fills). Unset: nothing is written.
const EnvRecordFile = "FAKE_CLOUD_RECORD_FILE"

// recordEnsure writes {"service": …, "nodes": […]} as JSON (the objects'
// Kubernetes field names) to path, replacing the previous call's: one call's
// worth of data, never a growing log. Written to a temporary file and
// renamed, so a reader never sees half of it. A failure is reported on
// stderr and otherwise ignored: recording never fails the call.
func recordEnsure(path string, c fake.UpdateBalancerCall) {
	data, err := json.Marshal(struct {
		Service any `json:"service"`
		Nodes   any `json:"nodes"`
	}{c.Service, c.Hosts})
	if err == nil {
		tmp := path + ".tmp"
		if err = os.WriteFile(tmp, data, 0o600); err == nil {
			err = os.Rename(tmp, path)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "{\"level\":\"warn\",\"msg\":\"cannot record the EnsureLoadBalancer call\",\"error\":%q}\n", err.Error())
	}
}
