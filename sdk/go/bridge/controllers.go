package bridge

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	ccmsdk "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go"
	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	cloudprovider "k8s.io/cloud-provider"
)

// DefaultNodeMonitorPeriod is upstream's --node-monitor-period default, which
// upstream hands its controllers (e.g. cloud-provider-aws's tagging
// controller's resync).
const DefaultNodeMonitorPeriod = 5 * time.Second

// ControllerContext is what a provider controller gets when it starts.
type ControllerContext struct {
	// Cloud is the bridged cloud (after its Initialize).
	Cloud cloudprovider.Interface
	// ClientBuilder makes the controller's Kubernetes clients (Options.ClientBuilder).
	ClientBuilder cloudprovider.ControllerClientBuilder
	// Informers is a factory of this run of the controller: ask it for the
	// informers the controller uses; the bridge starts it after the
	// controller's start returns, and stops it with the controller. It is
	// limited to the host's scope (ConfigureRequest.node_selector and
	// watch_namespace): its Node informer lists and watches only the Nodes
	// of the host's --node-selector, its namespaced informers only the
	// host's --watch-namespace, so the controller acts only on what this
	// host manages. A controller that lists with a client of its own
	// (ClientBuilder) is not limited: use these informers.
	Informers informers.SharedInformerFactory
	// NodeMonitorPeriod is upstream's --node-monitor-period default.
	NodeMonitorPeriod time.Duration
}

// Controller starts one of the provider's own controllers (a controller
// upstream's CCM built with this provider registers beside k8s.io/cloud-
// provider's, e.g. cloud-provider-aws's "tagging"), like upstream's
// InitFunc: it builds the controller, starts its goroutines on ctx and
// returns; ctx is cancelled when the host stops leading, asks for it no more,
// or the process ends. An error is reported to the host as a Configure
// warning and the controller is tried again on the next Configure that lists
// it.
type Controller func(ctx context.Context, c ControllerContext) error

// providerFlagNames are the long names of Options.Flags, sorted.
func providerFlagNames(fs *pflag.FlagSet) []string {
	if fs == nil {
		return nil
	}
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	sort.Strings(names)
	return names
}

func controllerNames(cs map[string]Controller) []string {
	names := make([]string, 0, len(cs))
	for n := range cs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// applyProviderArgs parses the host's provider_args into Options.Flags the
// first time (a flag set is parsed once: repeatable flags would append);
// later Configures with other words get a warning, as the provider keeps
// running on the first ones. Called with p.mu held.
func (p *Provider) applyProviderArgs(args []string) ([]string, error) {
	if p.parsedArgs != nil {
		if !slices.Equal(p.parsedArgs, args) {
			return []string{fmt.Sprintf("the provider keeps the flags it got first (%s), not %s: restart the provider to change them", strings.Join(p.parsedArgs, " "), strings.Join(args, " "))}, nil
		}
		return nil, nil
	}
	if len(args) > 0 {
		if p.opts.Flags == nil {
			return nil, ccmsdk.InvalidArgument(fmt.Sprintf("this provider has no flags of its own, but the host passed %s", strings.Join(args, " ")))
		}
		if err := p.opts.Flags.Parse(args); err != nil {
			return nil, ccmsdk.InvalidArgument(fmt.Sprintf("the provider's own flags %s: %v", strings.Join(args, " "), err))
		}
	}
	p.parsedArgs = append([]string{}, args...)
	return nil, nil
}

// Scope is what the host manages (ConfigureRequest.node_selector and
// watch_namespace); the provider's controllers see nothing outside it.
type Scope struct {
	// NodeSelector is a label selector for Nodes; "" selects every Node.
	NodeSelector string
	// Namespace limits namespaced objects; "" is every namespace.
	Namespace string
}

// scopeOf reads a Configure's scope; INVALID_ARGUMENT for a selector that
// does not parse (the host validates its flag, so only a foreign host sends one).
func scopeOf(nodeSelector, namespace string) (Scope, error) {
	if _, err := labels.Parse(nodeSelector); err != nil {
		return Scope{}, ccmsdk.InvalidArgument(fmt.Sprintf("node_selector %q: %v", nodeSelector, err))
	}
	return Scope{NodeSelector: nodeSelector, Namespace: namespace}, nil
}

// NewScopedInformerFactory is a shared informer factory limited to s, as
// the host's own informers are: the namespace applies to namespaced
// resources, the label selector to Nodes only (a tweak on the whole
// factory would also filter Services, Pods, ... by the Nodes' labels).
func NewScopedInformerFactory(client kubernetes.Interface, resync time.Duration, s Scope) informers.SharedInformerFactory {
	f := informers.NewSharedInformerFactoryWithOptions(client, resync, informers.WithNamespace(s.Namespace))
	if s.NodeSelector != "" {
		selector := s.NodeSelector
		// Registered first, so the factory's Core().V1().Nodes() returns this informer.
		f.InformerFor(&corev1.Node{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
			return coreinformers.NewFilteredNodeInformer(c, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
				func(o *metav1.ListOptions) { o.LabelSelector = selector })
		})
	}
	return f
}

// runControllers starts the listed controllers not running and stops the
// running ones not listed; when the scope changed (another host answers at
// the same endpoint) the running ones restart in the new scope. Called with
// p.mu held, after Initialize.
func (p *Provider) runControllers(names []string, scope Scope, builder cloudprovider.ControllerClientBuilder) ([]string, error) {
	for _, n := range names {
		if _, ok := p.opts.Controllers[n]; !ok {
			return nil, ccmsdk.InvalidArgument(fmt.Sprintf("this provider has no controller %q (it has: %s)", n, strings.Join(controllerNames(p.opts.Controllers), ", ")))
		}
	}
	if p.running == nil {
		p.running = map[string]context.CancelFunc{}
	}
	if scope != p.scope && len(p.running) > 0 {
		p.log.Info("provider controllers restart in the host's new scope", "nodeSelector", scope.NodeSelector, "namespace", scope.Namespace)
		p.stopControllers()
	}
	p.scope = scope
	for n, cancel := range p.running {
		if !slices.Contains(names, n) {
			cancel()
			delete(p.running, n)
			p.log.Info("provider controller stopped", "controller", n)
		}
	}
	var warnings []string
	for _, n := range names {
		if _, ok := p.running[n]; ok {
			continue
		}
		client, err := builder.Client("shared-informers")
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("the provider controller %s cannot start: no Kubernetes client: %v", n, err))
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		f := NewScopedInformerFactory(client, informerResync, scope)
		err = p.opts.Controllers[n](ctx, ControllerContext{Cloud: p.cloud, ClientBuilder: builder, Informers: f, NodeMonitorPeriod: DefaultNodeMonitorPeriod})
		if err != nil {
			cancel()
			warnings = append(warnings, fmt.Sprintf("the provider controller %s did not start: %v", n, err))
			continue
		}
		f.Start(ctx.Done())
		p.running[n] = cancel
		p.log.Info("provider controller started", "controller", n, "nodeSelector", scope.NodeSelector, "namespace", scope.Namespace)
	}
	return warnings, nil
}

// stopControllers stops every running provider controller. Called with p.mu held.
func (p *Provider) stopControllers() {
	for n, cancel := range p.running {
		cancel()
		delete(p.running, n)
		p.log.Info("provider controller stopped", "controller", n)
	}
}

// leaseControllers arms the lease of a successful Configure
// (ConfigureRequest.controllers_lease): when it passes before the next
// Configure, the running controllers stop, so that those of a host that
// died without saying so do not run beside a new leader's. No lease, or no
// controllers: nothing to expire. Called with p.mu held.
func (p *Provider) leaseControllers(req *pb.ConfigureRequest) {
	p.endLease()
	d := req.GetControllersLease().AsDuration()
	if d <= 0 || len(req.GetControllers()) == 0 {
		return
	}
	gen := p.leaseGen
	p.lease = time.AfterFunc(d, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		// A Configure since (a renewal, or none at all) owns the controllers now.
		if gen != p.leaseGen || len(p.running) == 0 {
			return
		}
		p.log.Warn("provider controllers lease expired: stopping them (the host did not renew it; a host that leads again restarts them)",
			"lease", d.String(), "controllers", strings.Join(slices.Sorted(maps.Keys(p.running)), ","))
		p.stopControllers()
	})
}

// endLease disarms the lease. Called with p.mu held.
func (p *Provider) endLease() {
	p.leaseGen++
	if p.lease != nil {
		p.lease.Stop()
		p.lease = nil
	}
}
