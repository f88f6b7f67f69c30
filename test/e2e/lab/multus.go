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

package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// The storage network: a bridge on the storage node that pods naming
// the NetworkAttachmentDefinition StorageNetwork join as net1. The storage
// node's end of the bridge is the gateway the workload node reaches it
// through (its default route is the storage node).
const (
	StorageNetwork = "storage"
	StorageSubnet  = "10.78.0.0/24"
	storageBridge  = "flint-storage"
	storageGateway = "10.78.0.1"
	multusUser     = "system:flint-lab:multus"
)

// StorageNetworkConfig is the CNI configuration of the storage network's
// NetworkAttachmentDefinition: a bridge with host-local addresses, whose
// route to the nodes' subnet keeps storage traffic on it both ways.
func StorageNetworkConfig() string {
	return fmt.Sprintf(`{"cniVersion": "0.3.1", "name": "flint-lab-storage", "type": "bridge", "bridge": %q, "isGateway": true,
 "ipam": {"type": "host-local", "subnet": %q, "rangeStart": "10.78.0.10", "routes": [{"dst": "10.77.0.0/24", "gw": %q}]}}`,
		storageBridge, StorageSubnet, storageGateway)
}

// multusRBAC lets the Multus thin plugin read pods and their networks and
// write the network status into a pod's annotations.
const multusRBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: flint-lab-multus}
rules:
- {apiGroups: ["k8s.cni.cncf.io"], resources: ["*"], verbs: ["get", "list", "watch"]}
- {apiGroups: [""], resources: ["pods"], verbs: ["get", "list", "watch"]}
- {apiGroups: [""], resources: ["pods/status"], verbs: ["get", "update"]}
- {apiGroups: ["", "events.k8s.io"], resources: ["events"], verbs: ["create", "patch", "update"]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: flint-lab-multus}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: flint-lab-multus}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: ` + multusUser + `}
`

// installMultus creates the NetworkAttachmentDefinition CRD, from
// Multus' own deployment manifest, and the plugin's permissions.
func (l *Lab) installMultus(ctx context.Context) error {
	data, err := os.ReadFile(l.MultusCRDs)
	if err != nil {
		return fmt.Errorf("read Multus' deployment manifest: %w", err)
	}
	var crd string
	for _, doc := range strings.Split(string(data), "\n---\n") {
		if strings.Contains(doc, "kind: CustomResourceDefinition") && strings.Contains(doc, "name: network-attachment-definitions.k8s.cni.cncf.io") {
			crd = doc
		}
	}
	if crd == "" {
		return fmt.Errorf("%s holds no NetworkAttachmentDefinition CRD", l.MultusCRDs)
	}
	dir := filepath.Join(l.Dir, "manifests")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, content := range map[string]string{"crd.yaml": crd, "rbac.yaml": multusRBAC} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
		if err := l.kubectl(ctx, "apply", "-f", filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return l.kubectl(ctx, "wait", "--for=condition=Established", "--timeout=60s", "crd/network-attachment-definitions.k8s.cni.cncf.io")
}

// kubectl runs the lab's kubectl as the admin.
func (l *Lab) kubectl(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, l.bin("kubectl"), append([]string{"--kubeconfig", l.AdminKubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// multusConfig makes Multus the node's CNI plugin, with the lab's bridge
// (cniConfig) as every pod's cluster network.
func (n node) multusConfig() (string, error) {
	var cluster map[string]any
	if err := json.Unmarshal([]byte(n.cniConfig()), &cluster); err != nil {
		return "", err
	}
	conf := map[string]any{
		"cniVersion": "1.0.0", "name": "multus-cni-network", "type": "multus",
		"kubeconfig": filepath.Join(n.etc, "multus.kubeconfig"),
		"binDir":     n.cniBin, "cniDir": filepath.Join(n.state, "multus"),
		"logFile": filepath.Join(filepath.Dir(n.podLogs), "multus.log"), "logLevel": "verbose",
		"delegates": []any{cluster},
	}
	data, err := json.MarshalIndent(conf, "", "  ")
	return string(data), err
}

// linkCNIPlugins fills dir, the storage node's CNI plugin directory, with
// Debian's plugins, linked, and Multus: the machine's own /usr/lib/cni
// stays as it is.
func (l *Lab) linkCNIPlugins(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	plugins, err := filepath.Glob("/usr/lib/cni/*")
	if err != nil {
		return err
	}
	for _, p := range plugins {
		if err := os.Symlink(p, filepath.Join(dir, filepath.Base(p))); err != nil && !os.IsExist(err) {
			return err
		}
	}
	return installFile(l.Multus, filepath.Join(dir, "multus"))
}

// installFile copies an executable.
func installFile(src, dst string) error {
	if out, err := exec.Command("install", "-D", "-m", "0755", src, dst).CombinedOutput(); err != nil {
		return fmt.Errorf("install %s: %v: %s", dst, err, out)
	}
	return nil
}
