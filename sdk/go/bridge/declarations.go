package bridge

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
)

// The environment variables through which whoever runs a bridged provider
// declares what it owns in a host with several providers (docs/protocol.md,
// "Node ownership" and "Load balancer classes"), without rebuilding it: the
// provider's code (Options) says what it owns by default, the operator's
// environment says what it owns in this cluster. A variable that is set
// replaces the matching Options field; one that is unset keeps it.
const (
	// EnvProviderIDPrefixes replaces Options.ProviderIDPrefixes:
	// comma-separated prefixes, each ending in "://".
	EnvProviderIDPrefixes = "CCM_BRIDGE_PROVIDER_ID_PREFIXES"
	// EnvNodeSelector replaces Options.NodeSelector: a label selector
	// (kubectl -l syntax) claiming Nodes without a providerID.
	EnvNodeSelector = "CCM_BRIDGE_NODE_SELECTOR"
	// EnvLoadBalancerClasses replaces Options.LoadBalancerClasses:
	// comma-separated Service loadBalancerClass values.
	EnvLoadBalancerClasses = "CCM_BRIDGE_LB_CLASSES"
	// EnvLoadBalancerClassesOnly replaces Options.LoadBalancerClassesOnly:
	// "true" or "false".
	EnvLoadBalancerClassesOnly = "CCM_BRIDGE_LB_CLASSES_ONLY"
)

// declarationsFromEnv returns opts with the ownership declarations the
// environment (lookup, e.g. os.LookupEnv) sets in place of opts' own, and
// checks the result: every problem in one error, so a provider started with
// a mistyped declaration exits at once instead of claiming the wrong Nodes
// or Services. Pure: it changes nothing but the returned copy.
func declarationsFromEnv(opts Options, lookup func(string) (string, bool)) (Options, error) {
	var problems []string
	if v, ok := lookup(EnvProviderIDPrefixes); ok {
		opts.ProviderIDPrefixes = commaList(v)
		if len(opts.ProviderIDPrefixes) == 0 {
			// Empty would mean the default prefix: say it with the variable unset instead.
			problems = append(problems, EnvProviderIDPrefixes+" is set but names no prefix (unset it for the default \"<provider name>://\")")
		}
	}
	if v, ok := lookup(EnvNodeSelector); ok {
		opts.NodeSelector = strings.TrimSpace(v)
	}
	if v, ok := lookup(EnvLoadBalancerClasses); ok {
		opts.LoadBalancerClasses = commaList(v)
	}
	if v, ok := lookup(EnvLoadBalancerClassesOnly); ok {
		switch strings.TrimSpace(v) {
		case "true":
			opts.LoadBalancerClassesOnly = true
		case "false":
			opts.LoadBalancerClassesOnly = false
		default:
			problems = append(problems, fmt.Sprintf("%s must be true or false, not %q", EnvLoadBalancerClassesOnly, v))
		}
	}
	for _, prefix := range opts.ProviderIDPrefixes {
		if !strings.HasSuffix(prefix, "://") || len(prefix) == len("://") {
			problems = append(problems, fmt.Sprintf("providerID prefix %q does not end in \"://\" after a provider name", prefix))
		}
	}
	if _, err := labels.Parse(opts.NodeSelector); err != nil {
		problems = append(problems, fmt.Sprintf("node selector %q: %v", opts.NodeSelector, err))
	}
	if opts.LoadBalancerClassesOnly && len(opts.LoadBalancerClasses) == 0 {
		problems = append(problems, "load balancer classes only, but no class is declared: the load balancers would serve no Service")
	}
	if len(problems) > 0 {
		return opts, fmt.Errorf("bridge: %s", strings.Join(problems, "; "))
	}
	return opts, nil
}

// commaList splits a comma-separated list, trimming spaces and dropping empty entries.
func commaList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
