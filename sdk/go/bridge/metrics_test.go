package bridge

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// testAPIMetric is registered the way cloud-provider-aws registers its own
// (legacyregistry.MustRegister), once per process.
var testAPIMetric = metrics.NewHistogramVec(&metrics.HistogramOpts{Name: "cloudprovider_test_api_request_duration_seconds", Help: "Test calls.", StabilityLevel: metrics.ALPHA}, []string{"request"})

func init() { legacyregistry.MustRegister(testAPIMetric) }

// The legacy registry as an upstream provider fills it comes out as valid
// text format: the provider's family under its own name, the process's
// families renamed so they cannot clash with the host's.
func TestMetricsExportTheLegacyRegistry(t *testing.T) {
	testAPIMetric.WithLabelValues("describe").Observe(0.25)

	text, err := newProvider(t, newTestCloud()).Metrics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("not valid text format: %v\n%s", err, text)
	}
	cases := []struct {
		name    string
		present bool
	}{
		{"cloudprovider_test_api_request_duration_seconds", true},
		{"ccm_plugin_go_goroutines", true},
		{"ccm_plugin_process_start_time_seconds", true},
		{"go_goroutines", false},
		{"process_start_time_seconds", false},
	}
	for _, c := range cases {
		if _, ok := families[c.name]; ok != c.present {
			t.Errorf("family %s present: %v, want %v", c.name, ok, c.present)
		}
	}
	for name := range families {
		for _, prefix := range processFamilyPrefixes {
			if strings.HasPrefix(name, prefix) {
				t.Errorf("family %s keeps a name the host serves itself", name)
			}
		}
	}
	if got := families["cloudprovider_test_api_request_duration_seconds"].GetMetric()[0].GetHistogram().GetSampleCount(); got < 1 {
		t.Errorf("sample count %d, want at least 1", got)
	}
}
