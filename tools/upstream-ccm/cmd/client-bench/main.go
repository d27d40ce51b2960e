// Command client-bench measures client-go doing what two of `npm run bench`'s
// sections measure for the host's Kubernetes client, so those sections have an
// upstream column: the upstream CCM is built on client-go, and these are the
// same client-go and apimachinery versions it links.
//
// Usage (each prints one JSON line on stdout):
//
//	client-bench get <kubeconfig> <requests> <warmup> <concurrency>
//	    GETs of Namespace "default": connections dialled (warm-up included), latency
//	    percentiles, this process's CPU per request.
//	client-bench informer <kubeconfig> <label selector> plain|trimmed
//	    syncs one Nodes informer and reports the heap it added and the
//	    process RSS; "plain" is what the upstream CCM runs (a shared informer
//	    factory without transforms), "trimmed" drops managedFields first.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// unthrottled is high enough that client-go's limiter never delays a request here.
const unthrottled = 1_000_000

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "client-bench: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	switch {
	case len(args) == 5 && args[0] == "get":
		n, err1 := strconv.Atoi(args[2])
		warmup, err2 := strconv.Atoi(args[3])
		concurrency, err3 := strconv.Atoi(args[4])
		if err1 != nil || err2 != nil || err3 != nil || n < 1 || warmup < 0 || concurrency < 1 {
			return fmt.Errorf("get: requests, warmup and concurrency must be whole numbers (requests and concurrency at least 1)")
		}
		return get(args[1], n, warmup, concurrency)
	case len(args) == 4 && args[0] == "informer" && (args[3] == "plain" || args[3] == "trimmed"):
		return informer(args[1], args[2], args[3] == "trimmed")
	}
	return fmt.Errorf("usage: client-bench get <kubeconfig> <requests> <warmup> <concurrency> | informer <kubeconfig> <selector> plain|trimmed")
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = unthrottled, unthrottled
	cfg.UserAgent = "client-bench"
	return cfg, nil
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func emit(v any) error { return json.NewEncoder(os.Stdout).Encode(v) }

func get(kubeconfig string, n, warmup, concurrency int) error {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return err
	}
	var dials atomic.Int64
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return dialer.DialContext(ctx, network, addr)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	one := func() error {
		_, err := cs.CoreV1().Namespaces().Get(ctx, "default", metav1.GetOptions{})
		return err
	}
	for i := 0; i < warmup; i++ {
		if err := one(); err != nil {
			return err
		}
	}
	var (
		mu        sync.Mutex
		latencies = make([]float64, 0, n)
		started   atomic.Int64
		firstErr  error
		wg        sync.WaitGroup
	)
	cpu0, t0 := cpuSeconds(), time.Now()
	for w := 0; w < concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for started.Add(1) <= int64(n) {
				s := time.Now()
				err := one()
				ms := float64(time.Since(s).Microseconds()) / 1000
				mu.Lock()
				latencies = append(latencies, ms)
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	wall, cpu := time.Since(t0), cpuSeconds()-cpu0
	if firstErr != nil {
		return firstErr
	}
	sort.Float64s(latencies)
	return emit(map[string]any{
		"client":          "client-go " + clientGoVersion(),
		"concurrency":     concurrency,
		"requests":        len(latencies),
		"connections":     dials.Load(), // warm-up included: the connections the timed requests could reuse
		"meanMs":          float64(wall.Microseconds()) / 1000 * float64(concurrency) / float64(len(latencies)),
		"p50Ms":           percentile(latencies, 50),
		"p99Ms":           percentile(latencies, 99),
		"cpuMsPerRequest": cpu * 1000 / float64(len(latencies)),
	})
}

// percentile of sorted values, nearest rank.
func percentile(sorted []float64, p float64) float64 {
	i := int(float64(len(sorted))*p/100+0.999999) - 1
	return sorted[max(0, min(len(sorted)-1, i))]
}

func informer(kubeconfig, selector string, trimmed bool) error {
	cfg, err := restConfig(kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	// Warm up what the informer loads (client, codecs) before the baseline.
	if _, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: selector, Limit: 1}); err != nil {
		return err
	}
	before := liveHeap()
	opts := []informers.SharedInformerOption{informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = selector })}
	if trimmed {
		opts = append(opts, informers.WithTransform(func(obj any) (any, error) {
			if m, ok := obj.(metav1.ObjectMetaAccessor); ok {
				m.GetObjectMeta().SetManagedFields(nil)
			}
			return obj, nil
		}))
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, opts...)
	inf := factory.Core().V1().Nodes().Informer()
	stop := make(chan struct{})
	factory.Start(stop)
	if !cache.WaitForCacheSync(stop, inf.HasSynced) {
		return fmt.Errorf("nodes informer did not sync")
	}
	time.Sleep(500 * time.Millisecond)
	after := liveHeap()
	mode := "plain"
	if trimmed {
		mode = "trimmed"
	}
	out := map[string]any{
		"mode":        mode,
		"nodes":       len(inf.GetStore().List()),
		"cacheHeapMb": float64(after-before) / (1 << 20),
		"rssMb":       rssMb(),
	}
	close(stop)
	factory.Shutdown()
	return emit(out)
}

// liveHeap is the heap in use after two full collections.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// rssMb reads VmRSS from /proc/self/status (Linux), in MiB.
func rssMb() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	var kb float64
	for _, line := range strings.Split(string(b), "\n") {
		if _, err := fmt.Sscanf(line, "VmRSS: %f kB", &kb); err == nil {
			return kb / 1024
		}
	}
	return 0
}

// clientGoVersion is the k8s.io/client-go version linked into this binary.
func clientGoVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == "k8s.io/client-go" {
				return d.Version
			}
		}
	}
	return "(unknown version)"
}
