package bridge

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/prometheus/common/expfmt"
	"k8s.io/component-base/metrics/legacyregistry"
)

// processFamilyPrefixes are the metric families every Go Kubernetes process
// has (the Go runtime, the process, client-go and the metrics framework's
// own): the host's process serves families of these names itself, and would
// drop the provider's, so [Provider.Metrics] renames them with
// [ProcessFamilyPrefix] in front.
var processFamilyPrefixes = []string{"go_", "process_", "rest_client_", "workqueue_", "registered_metrics_", "disabled_metrics_", "hidden_metrics_"}

// ProcessFamilyPrefix is put in front of the provider process's own
// families (go_*, process_*, rest_client_*, ...): on the host's /metrics
// the provider's resident memory is ccm_plugin_process_resident_memory_bytes
// (the host adds the plugin label).
const ProcessFamilyPrefix = "ccm_plugin_"

// Metrics implements ccmsdk.MetricsExporter (so the bridge announces
// CAPABILITY_METRICS): what an upstream cloud-controller-manager serves on
// its /metrics from this process, that is k8s.io/component-base's legacy
// registry, where providers register their own metrics (e.g.
// cloudprovider_aws_api_request_duration_seconds) and which holds the Go
// runtime and process collectors, in the text format 0.0.4. The provider's
// families keep their upstream names; the process's are renamed (see
// [ProcessFamilyPrefix]). Read-only and cheap; an error is a failed gather.
func (p *Provider) Metrics(context.Context) (string, error) {
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil && len(families) == 0 {
		return "", fmt.Errorf("gathering the provider's metrics: %w", err)
	}
	// A partial gather (err with families) still serves what was gathered:
	// prometheus.Gatherer returns what it could alongside the error.
	var buf bytes.Buffer
	for _, f := range families {
		name := f.GetName()
		for _, prefix := range processFamilyPrefixes {
			if strings.HasPrefix(name, prefix) {
				renamed := ProcessFamilyPrefix + name
				f.Name = &renamed
				break
			}
		}
		if _, err := expfmt.MetricFamilyToText(&buf, f); err != nil {
			return "", fmt.Errorf("encoding metric family %s: %w", name, err)
		}
	}
	return buf.String(), nil
}
