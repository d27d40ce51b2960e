package bridge

import (
	"slices"
	"strings"
	"testing"

	ccmsdk "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go"
)

// The ownership declarations from the environment (CCM_BRIDGE_*): a set
// variable replaces the provider's own Options, an unset one keeps it, and
// GetPluginCapabilities answers the result.
func TestDeclarationsFromTheEnvironment(t *testing.T) {
	type declared struct {
		prefixes []string
		selector string
		classes  []string
		only     bool
	}
	vendor := Options{ProviderIDPrefixes: []string{"test://"}, NodeSelector: "cloud=test", LoadBalancerClasses: []string{"example.com/vendor"}}
	for _, c := range []struct {
		name string
		opts Options
		env  map[string]string
		want declared
	}{
		{"nothing set: the cloud's defaults", Options{}, nil, declared{[]string{"test://"}, "", nil, false}},
		{"nothing set: the provider's Options", vendor, nil, declared{[]string{"test://"}, "cloud=test", []string{"example.com/vendor"}, false}},
		{
			"every variable set: replaces the Options",
			vendor,
			map[string]string{
				EnvProviderIDPrefixes:      " test:// , testmetal://,",
				EnvNodeSelector:            " topology.kubernetes.io/platform in (test, testmetal) ",
				EnvLoadBalancerClasses:     "example.com/a, example.com/b",
				EnvLoadBalancerClassesOnly: "true",
			},
			declared{[]string{"test://", "testmetal://"}, "topology.kubernetes.io/platform in (test, testmetal)", []string{"example.com/a", "example.com/b"}, true},
		},
		{"set empty: no selector, no class", vendor, map[string]string{EnvNodeSelector: "", EnvLoadBalancerClasses: ""}, declared{[]string{"test://"}, "", nil, false}},
		{"only false keeps Services without a class", Options{LoadBalancerClassesOnly: true, LoadBalancerClasses: []string{"x"}}, map[string]string{EnvLoadBalancerClassesOnly: "false"}, declared{[]string{"test://"}, "", []string{"x"}, false}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.opts.SDK = ccmsdk.Options{Logger: ccmsdk.NewLogger("test", nil, nil)}
			p, err := newWithEnv(&testCloud{lb: true}, c.opts, mapEnv(c.env))
			if err != nil {
				t.Fatal(err)
			}
			caps, err := ccmsdk.DeriveCapabilities(p)
			if err != nil {
				t.Fatal(err)
			}
			got := declared{caps.ProviderIdPrefixes, caps.NodeSelector, caps.LoadBalancerClasses, caps.LoadBalancerClassesOnly}
			if !slices.Equal(got.prefixes, c.want.prefixes) || got.selector != c.want.selector || !slices.Equal(got.classes, c.want.classes) || got.only != c.want.only {
				t.Errorf("declared %+v; want %+v", got, c.want)
			}
		})
	}
}

// Bad declarations stop New, every problem named in one error.
func TestDeclarationsFromTheEnvironmentRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		opts Options
		env  map[string]string
		want []string
	}{
		{"a prefix without ://", Options{}, map[string]string{EnvProviderIDPrefixes: "test"}, []string{`providerID prefix "test" does not end in "://"`}},
		{"a prefix in the Options without ://", Options{ProviderIDPrefixes: []string{"test"}}, nil, []string{`providerID prefix "test"`}},
		{"prefixes set to nothing", Options{}, map[string]string{EnvProviderIDPrefixes: " , "}, []string{EnvProviderIDPrefixes + " is set but names no prefix"}},
		{"a selector that does not parse", Options{}, map[string]string{EnvNodeSelector: "a in (b"}, []string{`node selector "a in (b"`}},
		{"only, not a boolean", Options{}, map[string]string{EnvLoadBalancerClassesOnly: "yes"}, []string{EnvLoadBalancerClassesOnly + ` must be true or false, not "yes"`}},
		{"only, without a class", Options{}, map[string]string{EnvLoadBalancerClassesOnly: "true"}, []string{"no class is declared"}},
		{
			"all at once",
			Options{},
			map[string]string{EnvProviderIDPrefixes: "x", EnvNodeSelector: "!!", EnvLoadBalancerClassesOnly: "1"},
			[]string{`providerID prefix "x"`, `node selector "!!"`, EnvLoadBalancerClassesOnly + " must be true or false"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := newWithEnv(&testCloud{lb: true}, c.opts, mapEnv(c.env))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Count(err.Error(), "\n") != 0 {
				t.Errorf("error %q is not one line", err)
			}
		})
	}
}

// New reads the process environment.
func TestNewReadsTheProcessEnvironment(t *testing.T) {
	t.Setenv(EnvLoadBalancerClasses, "example.com/from-env")
	p, err := New(&testCloud{lb: true}, Options{SDK: ccmsdk.Options{Logger: ccmsdk.NewLogger("test", nil, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Info().LoadBalancerClasses; !slices.Equal(got, []string{"example.com/from-env"}) {
		t.Errorf("classes %q", got)
	}
}

func mapEnv(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
}
