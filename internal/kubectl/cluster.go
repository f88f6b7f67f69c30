/*
Copyright 2026 The Flint Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package kubectl

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
)

// reachTimeout bounds the first request to the cluster.
const reachTimeout = 10 * time.Second

// Connect finds the cluster as kubectl does (kubeconfig, else $KUBECONFIG,
// else ~/.kube/config, else the in-cluster service account; kubeContext,
// else the current context) and checks that it answers. Its errors say
// which files and context were tried, the server, and what to change.
func Connect(kubeconfig, kubeContext string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	cfg, err := loader.ClientConfig()
	switch {
	case clientcmd.IsEmptyConfig(err):
		return nil, fmt.Errorf("no cluster to talk to: no kubeconfig found; tried %s; name one with --kubeconfig or $KUBECONFIG", tried(rules))
	case err != nil:
		return nil, fmt.Errorf("no cluster to talk to: %w; tried %s; name a kubeconfig with --kubeconfig or $KUBECONFIG, and a context with --context", err, tried(rules))
	}
	where := "the cluster at " + cfg.Host
	if raw, err := loader.RawConfig(); err == nil && len(raw.Contexts) > 0 {
		where += fmt.Sprintf(" (context %s of %s)", orCurrent(kubeContext, raw.CurrentContext), strings.Join(configFiles(rules), ", "))
	} else {
		where += " (in-cluster service account)"
	}
	probe := rest.CopyConfig(cfg)
	probe.Timeout = reachTimeout
	dc, err := discovery.NewDiscoveryClientForConfig(probe)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, err)
	}
	_, err = dc.ServerVersion()
	switch {
	case err == nil:
		return cfg, nil
	case apierrors.IsUnauthorized(err):
		return nil, fmt.Errorf("%s refused your credentials (%v): log in again, or pick another user or context", where, err)
	case apierrors.IsForbidden(err):
		// Anonymous access to /version may be off; the commands' own
		// requests say whether this user may read Flint's objects.
		return cfg, nil
	default:
		return nil, fmt.Errorf("cannot reach %s: %v; check that its apiserver is up and reachable from here (VPN, proxy, firewall), or pick another cluster with --kubeconfig or --context", where, err)
	}
}

// tried says where the loading rules looked for a kubeconfig.
func tried(rules *clientcmd.ClientConfigLoadingRules) string {
	if rules.ExplicitPath != "" {
		return "--kubeconfig " + rules.ExplicitPath + " (" + fileState(rules.ExplicitPath) + ")"
	}
	var places []string
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		places = append(places, "$KUBECONFIG="+env)
	} else {
		places = append(places, "$KUBECONFIG (unset)")
	}
	places = append(places, clientcmd.RecommendedHomeFile+" ("+fileState(clientcmd.RecommendedHomeFile)+")")
	if os.Getenv("KUBERNETES_SERVICE_HOST") == "" {
		places = append(places, "the in-cluster service account (not in a pod)")
	} else {
		places = append(places, "the in-cluster service account")
	}
	return strings.Join(places, ", ")
}

// configFiles are the kubeconfig files the rules read.
func configFiles(rules *clientcmd.ClientConfigLoadingRules) []string {
	if rules.ExplicitPath != "" {
		return []string{rules.ExplicitPath}
	}
	var files []string
	for _, f := range rules.Precedence {
		if _, err := os.Stat(f); err == nil {
			files = append(files, f)
		}
	}
	return files
}

func fileState(path string) string {
	if _, err := os.Stat(path); err != nil {
		return "absent"
	}
	return "present"
}

func orCurrent(asked, current string) string {
	if asked != "" {
		return asked
	}
	return current
}

// LastLogLineVia reads the last line a Pod's container logged through
// clients, for Plugin.LastLogLine.
func LastLogLineVia(clients kubernetes.Interface) func(ctx context.Context, namespace, pod, container string) (string, error) {
	return func(ctx context.Context, namespace, pod, container string) (string, error) {
		b, err := clients.CoreV1().Pods(namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, TailLines: ptr.To[int64](1)}).DoRaw(ctx)
		return strings.TrimSpace(string(b)), err
	}
}
