// Command hollow-kubelet runs one kubemark hollow kubelet (the real kubelet
// code with a fake container runtime, no cgroups, no containers) configured
// as a kubelet in an external-cloud cluster: --cloud-provider=external (so
// it registers with the node.cloudprovider.kubernetes.io/uninitialized
// taint and, with --node-ip, the alpha.kubernetes.io/provided-node-ip
// annotation), no provider ID of its own, every listener on loopback.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	fakeremote "k8s.io/cri-client/pkg/fake"
	"k8s.io/klog/v2"
	cadvisortest "k8s.io/kubernetes/pkg/kubelet/cadvisor/testing"
	"k8s.io/kubernetes/pkg/kubelet/cm"
	"k8s.io/kubernetes/pkg/kubemark"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server (required)")
	name := flag.String("name", "", "node name (required)")
	rootDir := flag.String("root-dir", "", "directory for the kubelet's state, certificates and the fake runtime's socket (required)")
	port := flag.Int("port", 0, "kubelet API port on 127.0.0.1 (required, unique per node)")
	nodeIP := flag.String("node-ip", "", "IP the kubelet reports as provided (alpha.kubernetes.io/provided-node-ip); empty: none")
	labels := flag.String("node-labels", "", "labels to register with, k=v,k=v")
	report := flag.Duration("node-status-report-frequency", 5*time.Minute, "how often the kubelet posts its status when nothing changed (the kubelet's own default: 5m)")
	klog.InitFlags(nil)
	flag.Parse()
	if *kubeconfig == "" || *name == "" || *rootDir == "" || *port <= 0 {
		fmt.Fprintln(os.Stderr, "hollow-kubelet: --kubeconfig, --name, --root-dir and --port are required")
		os.Exit(2)
	}
	if err := run(*kubeconfig, *name, *rootDir, *port, *nodeIP, *labels, *report); err != nil {
		klog.ErrorS(err, "hollow kubelet failed", "node", *name)
		os.Exit(1)
	}
}

func run(kubeconfig, name, rootDir string, port int, nodeIP, labels string, report time.Duration) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("load kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.UserAgent = "hollow-kubelet"
	client, err := clientset.NewForConfig(cfg)
	if err != nil {
		return err
	}
	nodeLabels := map[string]string{}
	for _, kv := range strings.Split(labels, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			nodeLabels[k] = v
		}
	}
	f, c := kubemark.GetHollowKubeletConfig(&kubemark.HollowKubeletOptions{
		NodeName: name, KubeletPort: port, MaxPods: 110, NodeLabels: nodeLabels,
	})
	// kubemark's defaults for a cluster where it is the cloud: undo them.
	os.RemoveAll(f.RootDirectory) // kubemark made it under TMPDIR; ours is given
	f.RootDirectory = rootDir
	f.CloudProvider = "external"
	f.NodeIP = nodeIP
	c.ProviderID = ""
	c.NodeStatusReportFrequency.Duration = report
	c.Address = "127.0.0.1"
	c.ReadOnlyPort = 0
	c.HealthzPort = 0
	c.StaticPodPath = filepath.Join(rootDir, "static-pods")
	c.PodLogsDir = filepath.Join(rootDir, "pod-logs")
	for _, d := range []string{c.StaticPodPath, c.PodLogsDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}

	// The heartbeat client times out like kubemark's: within a lease period.
	hb := *cfg
	hb.Timeout = min(c.NodeStatusUpdateFrequency.Duration, time.Duration(c.NodeLeaseDurationSeconds)*time.Second)
	hb.QPS = -1
	heartbeat, err := clientset.NewForConfig(&hb)
	if err != nil {
		return err
	}
	endpoint := "unix://" + filepath.Join(rootDir, "cri.sock")
	runtime := fakeremote.NewFakeRemoteRuntime()
	if err := runtime.Start(endpoint); err != nil {
		return fmt.Errorf("start fake runtime at %s: %w", endpoint, err)
	}
	defer runtime.Stop()
	runtimeService, err := newRuntimeService(endpoint, 15*time.Second)
	if err != nil {
		return err
	}
	kubemark.NewHollowKubelet(f, c, client, heartbeat, &cadvisortest.Fake{NodeName: name},
		runtime.ImageService, runtimeService, cm.NewStubContainerManager()).Run(context.Background())
	return nil
}
