package bridge

import (
	"fmt"
	"os"

	clientset "k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	cloudprovider "k8s.io/cloud-provider"
)

// EnvKubeconfig names a kubeconfig file for the clients the cloud's
// Initialize builds. In exec mode the host passes only the variables of
// --plugin-env, so set it there (or KUBERNETES_SERVICE_HOST and
// KUBERNETES_SERVICE_PORT for the in-cluster configuration).
const EnvKubeconfig = "KUBECONFIG"

// ClientBuilderFromEnv is the cloudprovider.ControllerClientBuilder the
// bridge gives Initialize by default: the kubeconfig named by $KUBECONFIG
// when set, else the in-cluster configuration (the pod's service account
// token and KUBERNETES_SERVICE_HOST/PORT). Each client carries the user
// agent "<name>" it was asked for, as upstream's builder does. The
// configuration is loaded on first use; when none can be loaded, Config and
// Client return the error and ConfigOrDie and ClientOrDie end the process
// (exit 1, as upstream's klog.Fatal does), so a cloud that needs no client
// runs without one.
func ClientBuilderFromEnv() cloudprovider.ControllerClientBuilder {
	return &envClientBuilder{kubeconfig: os.Getenv(EnvKubeconfig)}
}

type envClientBuilder struct{ kubeconfig string }

func (b *envClientBuilder) base() (*restclient.Config, error) {
	if b.kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", b.kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("loading the kubeconfig %s=%s: %w", EnvKubeconfig, b.kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := restclient.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("no Kubernetes client configuration: set %s (in exec mode with --plugin-env) or run in a pod: %w", EnvKubeconfig, err)
	}
	return cfg, nil
}

// Config is a fresh copy of the configuration with user agent name.
func (b *envClientBuilder) Config(name string) (*restclient.Config, error) {
	cfg, err := b.base()
	if err != nil {
		return nil, err
	}
	return restclient.AddUserAgent(cfg, name), nil
}

// ConfigOrDie is Config, exiting the process on error.
func (b *envClientBuilder) ConfigOrDie(name string) *restclient.Config {
	cfg, err := b.Config(name)
	if err != nil {
		die(err)
	}
	return cfg
}

// Client is a clientset for Config(name).
func (b *envClientBuilder) Client(name string) (clientset.Interface, error) {
	cfg, err := b.Config(name)
	if err != nil {
		return nil, err
	}
	return clientset.NewForConfig(cfg)
}

// ClientOrDie is Client, exiting the process on error.
func (b *envClientBuilder) ClientOrDie(name string) clientset.Interface {
	c, err := b.Client(name)
	if err != nil {
		die(err)
	}
	return c
}

func die(err error) {
	fmt.Fprintln(os.Stderr, "fatal error: cloud provider client: "+err.Error())
	os.Exit(1)
}
