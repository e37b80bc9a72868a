package cli

import (
	"errors"
	"flag"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// errNoKubeconfig is serve's one line when it finds no kube-apiserver to talk to.
var errNoKubeconfig = errors.New("no kube-apiserver configured: pass --kubeconfig, set KUBECONFIG, put one in ~/.kube/config, or run in a pod with a service account")

// kubeConfig finds the kube-apiserver as kubectl does: --kubeconfig, $KUBECONFIG,
// ~/.kube/config, then the pod's service account. It replaces ctrl.GetConfig, which logs
// an error with a stack trace whenever the process is not in a pod and then fails with a
// message about KUBERNETES_MASTER, a setting this program does not read.
func kubeConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if f := flag.Lookup("kubeconfig"); f != nil {
		rules.ExplicitPath = f.Value.String()
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		return nil, errNoKubeconfig
	}
	if err != nil {
		return nil, fmt.Errorf("load the kubeconfig: %w", err)
	}
	// controller-runtime's client defaults (client-go's 5/10 throttle the controllers).
	if cfg.QPS == 0 {
		cfg.QPS = 20
	}
	if cfg.Burst == 0 {
		cfg.Burst = 30
	}
	return cfg, nil
}
