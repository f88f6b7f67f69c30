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

// Package chart checks charts/flint with the pinned helm
// (hack/tools/helm): it lints, renders with every option, refuses values
// the schema does not know, and its rendering installs on a real
// kube-apiserver (envtest), CRDs included.
package chart

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/test/localcluster"
)

var root = filepath.Join("..", "..")

// helm runs the pinned helm in the repository's root.
func helm(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"tool", "-modfile=hack/tools/helm/go.mod", "helm"}, args...)...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, errors.New(strings.TrimSpace(stderr.String()) + ": " + err.Error())
	}
	return out, nil
}

// everything turns every optional part of the chart on.
var everything = []string{
	"--set", "monitoring.serviceMonitor=true,monitoring.podMonitor=true,monitoring.prometheusRule=true,monitoring.dashboard=true",
	"--set", "storageClass.create=true,storageClass.pool=fast,storageClass.default=true,storageClass.hostAuthentication=DHHMACCHAP,namespace.create=true,snapshots.class.create=true,nvmeDevicePlugin.enabled=true,rdmaDevicePlugin.enabled=true",
	"--set-json", `pools=[{"name":"fast","spec":{"replicas":1,"devices":{"driver":"malloc","malloc":{"size":"1Gi"}}}}]`,
}

func TestLint(t *testing.T) {
	for _, args := range [][]string{nil, everything} {
		if out, err := helm(t, append([]string{"lint", "--strict", "charts/flint"}, args...)...); err != nil {
			t.Fatalf("helm lint %v: %v\n%s", args, err, out)
		}
	}
}

// Values the chart does not know, or cannot honour, are refused with a
// message, not ignored.
func TestValuesAreChecked(t *testing.T) {
	for _, tt := range []struct {
		set, says string
	}{
		{"operator.targetGrac=1m", "additional properties 'targetGrac' not allowed"},
		{"operator.targetGrace=soon", "/operator/targetGrace"},
		{"namespace.podSecurity=restricted", "/namespace/podSecurity"},
		{"storageClass.create=true", "storageClass.pool must name the Pool"},
		{"kubeletDir=var/lib/kubelet", "/kubeletDir"},
		{"csi.logLevel=loud", "/csi/logLevel"},
		{"storageClass.hostAuthentication=dhchap", "/storageClass/hostAuthentication"},
	} {
		out, err := helm(t, "template", "flint", "charts/flint", "--set", tt.set)
		if err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("--set %s: %v, want an error saying %q\n%s", tt.set, err, tt.says, out)
		}
	}
}

// A class whose hosts authenticate names, as the node-stage secret, the
// Secret the operator makes for each Volume, in the operator's namespace:
// the kubelet hands it to the node plugin at NodeStageVolume.
func TestAuthenticatingStorageClassNamesTheVolumesSecret(t *testing.T) {
	out, err := helm(t, append([]string{"template", "flint", "charts/flint", "--namespace", "flint-system"}, everything...)...)
	if err != nil {
		t.Fatal(err)
	}
	var params map[string]any
	for _, o := range decode(t, out) {
		if o.GetKind() == "StorageClass" {
			params, _, _ = unstructured.NestedMap(o.Object, "parameters")
		}
	}
	want := map[string]string{
		"hostAuthentication":                               "DHHMACCHAP",
		"csi.storage.k8s.io/node-stage-secret-name":        flintv1.HostAuthSecretName("${pv.name}"),
		"csi.storage.k8s.io/node-stage-secret-namespace":   "flint-system",
		"csi.storage.k8s.io/node-publish-secret-name":      flintv1.HostAuthSecretName("${pv.name}"),
		"csi.storage.k8s.io/node-publish-secret-namespace": "flint-system",
	}
	for k, v := range want {
		if params[k] != v {
			t.Errorf("StorageClass parameter %s = %v, want %q (all: %v)", k, params[k], v, params)
		}
	}
}

// The rendering, CRDs first, is accepted by a real kube-apiserver: every
// object is valid to its schema (the Pool to its CEL rules too).
func TestRenderingInstalls(t *testing.T) {
	out, err := helm(t, append([]string{"template", "flint", "charts/flint", "--namespace", "flint-system", "--include-crds"}, everything...)...)
	if err != nil {
		t.Fatal(err)
	}
	objs := decode(t, out)
	// The VolumeSnapshot CRDs are the cluster's, as README.md says.
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join(root, "test", "operator", "testdata", "crds"), filepath.Join(root, "config", "snapshot-crds")}}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start envtest; is KUBEBUILDER_ASSETS set? run 'make test-envtest': %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// prometheus-operator's CRDs are not ours to install; without them its
	// objects cannot be checked here.
	skip := map[string]bool{"ServiceMonitor": true, "PodMonitor": true, "PrometheusRule": true}
	objs = slices.DeleteFunc(objs, func(o *unstructured.Unstructured) bool { return skip[o.GetKind()] })
	if err := localcluster.ApplyObjects(context.Background(), c, objs); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}
	t.Logf("installed: %v", kinds)
	for _, want := range []string{"CustomResourceDefinition", "Namespace", "Deployment", "DaemonSet", "ClusterRole", "Role", "ServiceAccount", "CSIDriver", "NetworkPolicy", "StorageClass", "VolumeSnapshotClass", "Pool", "ConfigMap", "Service"} {
		if kinds[want] == 0 {
			t.Errorf("the rendering has no %s", want)
		}
	}
}

// decode splits helm's output into objects.
func decode(t *testing.T, out []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatal(err)
		}
		if m != nil {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

// Every pod pulls with the release's pull Secrets (OSD pods too, through
// the operator) and gives every container resources; the node plugin and
// the device plugins follow a moved kubelet directory; log levels reach
// the operator and the driver.
func TestPodSettings(t *testing.T) {
	out, err := helm(t, "template", "flint", "charts/flint", "--set", "nvmeDevicePlugin.enabled=true,rdmaDevicePlugin.enabled=true,snapshots.enabled=true",
		"--set", "imagePullSecrets={regcred},kubeletDir=/var/lib/k0s/kubelet,operator.logLevel=debug,csi.logLevel=2")
	if err != nil {
		t.Fatal(err)
	}
	pods := 0
	var rendered strings.Builder
	for _, o := range decode(t, out) {
		if o.GetKind() != "Deployment" && o.GetKind() != "DaemonSet" {
			continue
		}
		pods++
		spec, _, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
		if got := fmt.Sprint(spec["imagePullSecrets"]); got != "[map[name:regcred]]" {
			t.Errorf("%s pulls with %s, want regcred", o.GetName(), got)
		}
		for _, c := range spec["containers"].([]any) {
			c := c.(map[string]any)
			if requests, _, _ := unstructured.NestedMap(c, "resources", "requests"); len(requests) == 0 {
				t.Errorf("container %s of %s requests no resources", c["name"], o.GetName())
			}
			args := fmt.Sprint(c["args"])
			rendered.WriteString(o.GetName() + "/" + c["name"].(string) + ": " + args + "\n")
		}
		volumes, _, _ := unstructured.NestedSlice(spec, "volumes")
		for _, v := range volumes {
			path, _, _ := unstructured.NestedString(v.(map[string]any), "hostPath", "path")
			if strings.HasPrefix(path, "/var/lib/kubelet") {
				t.Errorf("%s mounts %s, not under kubeletDir", o.GetName(), path)
			}
		}
	}
	if pods < 5 {
		t.Fatalf("rendered %d pod templates, want the operator, the CSI controller and node, and two device plugins", pods)
	}
	for _, want := range []string{
		"flint-operator/operator: [.* --zap-log-level=debug --osd-image-pull-secrets=regcred]",
		"flint-csi-controller/csi-driver: [--controller .* --zap-log-level=2]",
		"flint-csi-node/csi-driver: [--node .* --state-dir=/var/lib/k0s/kubelet/plugins/csi.flint.io/volumes --zap-log-level=2]",
		"flint-csi-node/node-driver-registrar: [.* --kubelet-registration-path=/var/lib/k0s/kubelet/plugins/csi.flint.io/csi.sock]",
	} {
		if !regexp.MustCompile("(?m)^" + strings.NewReplacer("[", `\[`, "]", `\]`).Replace(want) + "$").MatchString(rendered.String()) {
			t.Errorf("no container runs like %q; rendered:\n%s", want, rendered.String())
		}
	}
}

// Each device plugin runs its own osd-agent command with its own flags.
func TestDevicePlugins(t *testing.T) {
	out, err := helm(t, "template", "flint", "charts/flint", "--set", "nvmeDevicePlugin.enabled=true,rdmaDevicePlugin.enabled=true,rdmaDevicePlugin.shared=4",
		"--set-json", `rdmaDevicePlugin.devices=["rxe0","mlx5_1"]`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]any{
		"flint-nvme-device-plugin": {"/usr/local/bin/osd-agent", "nvme-device-plugin", "--resource-name=flint.io/nvme", "--kubelet-dir=/var/lib/kubelet/device-plugins"},
		"flint-rdma-device-plugin": {"/usr/local/bin/osd-agent", "rdma-device-plugin", "--resource-name=flint.io/rdma", "--kubelet-dir=/var/lib/kubelet/device-plugins", "--shared=4", "--devices=rxe0,mlx5_1"},
	}
	for _, o := range decode(t, out) {
		w, ok := want[o.GetName()]
		if o.GetKind() != "DaemonSet" || !ok {
			continue
		}
		delete(want, o.GetName())
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		c := containers[0].(map[string]any)
		if got := append(c["command"].([]any), c["args"].([]any)...); !reflect.DeepEqual(got, w) {
			t.Errorf("%s runs %v, want %v", o.GetName(), got, w)
		}
	}
	if len(want) > 0 {
		t.Errorf("not rendered: %v", want)
	}
}
