package bridge

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	ccmsdk "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go"
	pb "github.com/grpc-ccm/grpc-cloud-controller-manager/sdk/go/gen/ccm/provider/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	cloudprovider "k8s.io/cloud-provider"
)

// fakeBuilder hands out one fake clientset.
type fakeBuilder struct {
	cloudprovider.ControllerClientBuilder
	client clientset.Interface
}

func (b fakeBuilder) Client(string) (clientset.Interface, error) { return b.client, nil }
func (b fakeBuilder) Config(string) (*restclient.Config, error)  { return &restclient.Config{}, nil }

// seen is what a provider controller's informers hold once synced.
type seen struct{ nodes, services []string }

// scopeProbe is a provider controller that reports what its Node and
// Service informers hold.
func scopeProbe(out chan<- seen) Controller {
	return func(ctx context.Context, c ControllerContext) error {
		nodes := c.Informers.Core().V1().Nodes()
		services := c.Informers.Core().V1().Services()
		nodes.Informer()
		services.Informer()
		go func() {
			if !cache.WaitForCacheSync(ctx.Done(), nodes.Informer().HasSynced, services.Informer().HasSynced) {
				return
			}
			var s seen
			ns, _ := nodes.Lister().List(labels.Everything())
			for _, n := range ns {
				s.nodes = append(s.nodes, n.Name)
			}
			ss, _ := services.Lister().List(labels.Everything())
			for _, x := range ss {
				s.services = append(s.services, x.Namespace+"/"+x.Name)
			}
			sort.Strings(s.nodes)
			sort.Strings(s.services)
			out <- s
		}()
		return nil
	}
}

// The provider's own controllers see only the host's scope
// (ConfigureRequest.node_selector, watch_namespace), as the host's
// controllers do: a Node of another host is never acted on.
func TestProviderControllersSeeOnlyTheHostsScope(t *testing.T) {
	objs := []runtime.Object{
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "mine", Labels: map[string]string{"pool": "a"}}},
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "other-pool", Labels: map[string]string{"pool": "b"}}},
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "unlabelled"}},
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-a", Name: "svc"}},
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-b", Name: "svc"}},
	}
	for _, tc := range []struct {
		name         string
		nodeSelector string
		namespace    string
		wantNodes    []string
		wantServices []string
	}{
		{"no scope: everything", "", "", []string{"mine", "other-pool", "unlabelled"}, []string{"ns-a/svc", "ns-b/svc"}},
		{"node selector: its Nodes, Services of every namespace", "pool=a", "", []string{"mine"}, []string{"ns-a/svc", "ns-b/svc"}},
		{"namespace: every Node, its Services", "", "ns-a", []string{"mine", "other-pool", "unlabelled"}, []string{"ns-a/svc"}},
		{"both", "pool=a", "ns-a", []string{"mine"}, []string{"ns-a/svc"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := make(chan seen, 1)
			p, err := New(newTestCloud(), Options{
				ClientBuilder: fakeBuilder{client: fake.NewClientset(objs...)},
				Controllers:   map[string]Controller{"probe": scopeProbe(out)},
				SDK:           ccmsdk.Options{Logger: ccmsdk.NewLogger("test", nil, nil)},
			})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			defer func() { _ = p.Close(ctx) }()
			if _, err := p.Configure(ctx, &pb.ConfigureRequest{Controllers: []string{"probe"}, NodeSelector: tc.nodeSelector, WatchNamespace: tc.namespace}); err != nil {
				t.Fatal(err)
			}
			select {
			case s := <-out:
				if !slices.Equal(s.nodes, tc.wantNodes) || !slices.Equal(s.services, tc.wantServices) {
					t.Errorf("the controller sees nodes %v, services %v; want %v, %v", s.nodes, s.services, tc.wantNodes, tc.wantServices)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the controller's informers never synced")
			}
		})
	}
}

// A selector that does not parse is refused, and nothing starts.
func TestProviderControllersRefuseABadSelector(t *testing.T) {
	out := make(chan seen, 1)
	p, _ := New(newTestCloud(), Options{
		ClientBuilder: fakeBuilder{client: fake.NewClientset()},
		Controllers:   map[string]Controller{"probe": scopeProbe(out)},
		SDK:           ccmsdk.Options{Logger: ccmsdk.NewLogger("test", nil, nil)},
	})
	ctx := context.Background()
	defer func() { _ = p.Close(ctx) }()
	if _, err := p.Configure(ctx, &pb.ConfigureRequest{Controllers: []string{"probe"}, NodeSelector: "pool in (a"}); code(err) != codes.InvalidArgument {
		t.Fatalf("Configure with a bad selector: %v; want INVALID_ARGUMENT", err)
	}
	if len(p.running) != 0 {
		t.Errorf("running %v after a refused Configure", p.running)
	}
}

// runs is a provider controller that reports each start and each stop.
func runs(started, stopped chan<- struct{}) Controller {
	return func(ctx context.Context, _ ControllerContext) error {
		started <- struct{}{}
		go func() {
			<-ctx.Done()
			stopped <- struct{}{}
		}()
		return nil
	}
}

// ConfigureRequest.controllers_lease: the controllers stop unless a
// Configure renews the lease in time; renewals keep them running; the next
// Configure that lists them starts them again; no lease, no expiry.
func TestProviderControllersStopWhenTheirLeaseIsNotRenewed(t *testing.T) {
	started, stopped := make(chan struct{}, 8), make(chan struct{}, 8)
	p, _ := New(newTestCloud(), Options{
		ClientBuilder: fakeBuilder{client: fake.NewClientset()},
		Controllers:   map[string]Controller{"c": runs(started, stopped)},
		SDK:           ccmsdk.Options{Logger: ccmsdk.NewLogger("test", nil, nil)},
	})
	ctx := context.Background()
	defer func() { _ = p.Close(ctx) }()
	configure := func(lease time.Duration) {
		t.Helper()
		if _, err := p.Configure(ctx, &pb.ConfigureRequest{Controllers: []string{"c"}, ControllersLease: durationpb.New(lease)}); err != nil {
			t.Fatal(err)
		}
	}
	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatalf("the controller never %s", what)
		}
	}

	// Renewed every 20 ms under a 2 s lease for half a second: never stopped.
	configure(2 * time.Second)
	wait(started, "started")
	for range 25 {
		configure(2 * time.Second)
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case <-stopped:
		t.Fatal("stopped while the lease was being renewed")
	default:
	}
	if len(started) != 0 {
		t.Fatal("a renewal started the controller again")
	}

	// Not renewed: stopped once the lease passes.
	configure(50 * time.Millisecond)
	wait(stopped, "stopped when its lease passed")
	p.mu.Lock()
	left := len(p.running)
	p.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d controllers still listed as running", left)
	}

	// The next Configure that lists it starts it again; without a lease it has no timer.
	configure(0)
	wait(started, "started again")
	p.mu.Lock()
	armed := p.lease != nil
	p.mu.Unlock()
	if armed {
		t.Error("a lease timer without controllers_lease")
	}
}
