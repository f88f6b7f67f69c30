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

package admission

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// Valid objects that each case breaks in exactly one way.
const (
	poolBase = `
apiVersion: flint.io/v1alpha1
kind: Pool
spec:
  devices: {driver: pcie, resourceName: flint.io/nvme}
  osd: {hugepages: {amount: 2Gi}}
`
	osdBase = `
apiVersion: flint.io/v1alpha1
kind: OSD
spec:
  pool: fast
  nodeName: worker-a
  device: {driver: aio, path: /dev/nvme1n1}
`
	volumeBase = `
apiVersion: flint.io/v1alpha1
kind: Volume
spec:
  pool: fast
  size: 10Gi
`
	snapshotBase = `
apiVersion: flint.io/v1alpha1
kind: Snapshot
spec:
  volume: v1
`
)

// rejection is an object the apiserver must refuse at creation: base with
// patch merged over it (JSON merge patch: null removes a key).
type rejection struct {
	name    string
	base    string
	patch   string
	message string
}

var rejections = []rejection{
	// Pool
	{"pool replicas above 5", poolBase, `spec: {replicas: 6}`, "should be less than or equal to 5"},
	{"pool replicas below 1", poolBase, `spec: {replicas: 0}`, "should be greater than or equal to 1"},
	{"pool unknown driver", poolBase, `spec: {devices: {driver: spdk}}`, `Unsupported value: "spdk"`},
	{"pool failure domain not a label key", poolBase, `spec: {failureDomain: "not a label!"}`, "spec.failureDomain in body should match"},
	{"pool pcie without hugepages", poolBase, `spec: {osd: {hugepages: null}}`,
		"devices.driver pcie needs osd.hugepages"},
	{"pool hugepages not a whole number of 2Mi pages", poolBase, `spec: {osd: {hugepages: {amount: 3Mi}}}`,
		"hugepages.amount must be a positive whole number of hugepages.size pages"},
	{"pool hugepages not a whole number of 1Gi pages", poolBase, `spec: {osd: {hugepages: {size: 1Gi, amount: 1536Mi}}}`,
		"hugepages.amount must be a positive whole number of hugepages.size pages"},
	{"pool hugepages of zero", poolBase, `spec: {osd: {hugepages: {amount: "0"}}}`,
		"hugepages.amount must be a positive whole number of hugepages.size pages"},
	{"pool hugepage size 4Mi", poolBase, `spec: {osd: {hugepages: {size: 4Mi}}}`, `Unsupported value: "4Mi"`},
	{"pool no cores", poolBase, `spec: {osd: {cpus: 0}}`, "should be greater than or equal to 1"},
	{"pool log level trace", poolBase, `spec: {osd: {logLevel: trace}}`, `Unsupported value: "trace"`},
	{"pool malloc without size", poolBase, `spec: {devices: {driver: malloc, resourceName: null}}`,
		"devices.driver malloc needs devices.malloc.size"},
	{"pool malloc size with another driver", poolBase, `spec: {devices: {malloc: {size: 1Gi}}}`,
		"devices.malloc is only valid with devices.driver malloc"},
	{"pool both resourceName and nodes", poolBase, `spec: {devices: {nodes: [{node: a, devices: ["0000:3b:00.0"]}]}}`,
		"set exactly one of devices.resourceName (devices from a device plugin) and devices.nodes"},
	{"pool neither resourceName nor nodes", poolBase, `spec: {devices: {resourceName: null}}`,
		"set exactly one of devices.resourceName (devices from a device plugin) and devices.nodes"},
	{"pool malloc with nodes", poolBase,
		`spec: {devices: {driver: malloc, resourceName: null, malloc: {size: 1Gi}, nodes: [{node: a, devices: [/dev/x]}]}}`,
		"devices.nodes lists real devices; remove it for driver malloc"},
	{"pool device plugin with aio", poolBase, `spec: {devices: {driver: aio}}`,
		"devices.resourceName hands out PCI devices and needs driver pcie"},
	{"pool pcie device given as a path", poolBase,
		`spec: {devices: {resourceName: null, nodes: [{node: a, devices: [/dev/nvme0n1]}]}}`,
		"devices.nodes[].devices must be PCI addresses such as 0000:3b:00.0 for driver pcie"},
	{"pool aio device given as a name", poolBase,
		`spec: {devices: {driver: aio, resourceName: null, nodes: [{node: a, devices: [nvme0n1]}]}}`,
		"devices.nodes[].devices must be PCI addresses such as 0000:3b:00.0 for driver pcie"},
	{"pool node listed twice", poolBase,
		`spec: {devices: {resourceName: null, nodes: [{node: a, devices: ["0000:3b:00.0"]}, {node: a, devices: ["0000:3c:00.0"]}]}}`,
		"Duplicate value"},
	{"pool maxPerNode with listed devices", poolBase,
		`spec: {devices: {resourceName: null, maxPerNode: 2, nodes: [{node: a, devices: ["0000:3b:00.0"]}]}}`,
		"devices.maxPerNode bounds devices from a device plugin or malloc devices"},
	{"pool rdma without attachment", poolBase,
		`spec: {network: {transport: rdma, resourceName: nvidia.com/rdma_vf}}`,
		"network.transport rdma needs network.attachment"},
	{"pool rdma without VF resource", poolBase,
		`spec: {network: {transport: rdma, attachment: sriov-rdma}}`,
		"network.transport rdma needs network.resourceName"},
	{"pool rdma on the host network without an RDMA resource", poolBase,
		`spec: {network: {transport: rdma, hostNetwork: true}}`,
		"network.transport rdma needs network.resourceName"},
	{"pool host network with an attachment", poolBase,
		`spec: {network: {hostNetwork: true, attachment: sriov-rdma}}`,
		"network.hostNetwork uses the node's own interfaces: remove network.attachment"},
	{"pool port below 1024", poolBase, `spec: {network: {port: 80}}`, "should be greater than or equal to 1024"},
	{"pool in-capsule data above the io unit", poolBase, `spec: {nvmf: {ioUnitSize: 8192, inCapsuleDataSize: 16384}}`,
		"nvmf.inCapsuleDataSize must not exceed nvmf.ioUnitSize"},
	{"pool buffer cache above the pool", poolBase, `spec: {nvmf: {numSharedBuffers: 64, bufCacheSize: 128}}`,
		"nvmf.bufCacheSize (buffers cached per poll group) must not exceed nvmf.numSharedBuffers"},
	{"pool overcommit below 100", poolBase, `spec: {overcommitPercent: 50}`, "should be greater than or equal to 100"},

	// OSD
	{"osd pcie with address and resource", osdBase,
		`spec: {device: {driver: pcie, path: null, pciAddress: "0000:3b:00.0", resourceName: flint.io/nvme}, resources: {hugepages: {amount: 2Gi}}}`,
		"device.driver pcie needs exactly one of device.pciAddress and device.resourceName"},
	{"osd pcie with neither address nor resource", osdBase,
		`spec: {device: {driver: pcie, path: null}, resources: {hugepages: {amount: 2Gi}}}`,
		"device.driver pcie needs exactly one of device.pciAddress and device.resourceName"},
	{"osd pcie without hugepages", osdBase,
		`spec: {device: {driver: pcie, path: null, pciAddress: "0000:3b:00.0"}}`,
		"device.driver pcie needs resources.hugepages"},
	{"osd bad PCI address", osdBase,
		`spec: {device: {driver: pcie, path: null, pciAddress: "3b:00.0"}, resources: {hugepages: {amount: 2Gi}}}`,
		"spec.device.pciAddress in body should match"},
	{"osd aio without path", osdBase, `spec: {device: {path: null}}`,
		"device.path is required for, and only valid with, drivers aio and uring"},
	{"osd malloc without size", osdBase, `spec: {device: {driver: malloc, path: null}}`,
		"device.malloc is required for, and only valid with, driver malloc"},
	{"osd aio with a PCI address", osdBase, `spec: {device: {pciAddress: "0000:3b:00.0"}}`,
		"device.pciAddress and device.resourceName are only valid with driver pcie"},
	{"osd relative path", osdBase, `spec: {device: {path: nvme1n1}}`, "spec.device.path in body should match"},
	{"osd without pool", osdBase, `spec: {pool: null}`, "spec.pool: Required value"},

	// Volume
	{"volume below 1Mi", volumeBase, `spec: {size: 512Ki}`, "size must be at least 1Mi"},
	{"volume above 1Pi", volumeBase, `spec: {size: 2Pi}`, "size must be at most 1Pi"},
	{"volume near int64's limit", volumeBase, `spec: {size: "9223372036854775807"}`, "size must be at most 1Pi"},
	{"volume replicas above 5", volumeBase, `spec: {replicas: 7}`, "should be less than or equal to 5"},
	{"volume with two sources", volumeBase, `spec: {source: {snapshot: s1, volume: v1}}`,
		"set exactly one of source.snapshot and source.volume"},
	{"volume with an empty source", volumeBase, `spec: {source: {}}`,
		"set exactly one of source.snapshot and source.volume"},
	{"volume host that is no NQN", volumeBase, `spec: {publishedHosts: [node-1]}`,
		"spec.publishedHosts[0] in body should match"},
	{"volume host authentication unknown", volumeBase, `spec: {hostAuthentication: CHAP}`,
		"spec.hostAuthentication: Unsupported value"},
}

// mutation is an update the apiserver must refuse on an existing object.
type mutation struct {
	name    string
	base    string
	patch   string
	message string
}

var immutables = []mutation{
	{"pool replicas", poolBase, `spec: {replicas: 2}`, "replicas is immutable: create a new Pool"},
	{"pool failure domain", poolBase, `spec: {failureDomain: topology.kubernetes.io/zone}`, "failureDomain is immutable"},
	{"osd pool", osdBase, `spec: {pool: other}`, "pool is immutable: an OSD's lvstore belongs to one Pool"},
	{"osd node", osdBase, `spec: {nodeName: worker-b}`, "nodeName is immutable"},
	{"osd device", osdBase, `spec: {device: {path: /dev/nvme2n1}}`, "device is immutable"},
	{"volume pool", volumeBase, `spec: {pool: other}`, "pool is immutable: a Volume's replicas live in one Pool"},
	{"volume shrink", volumeBase, `spec: {size: 5Gi}`, "size cannot shrink"},
	{"volume replicas added", volumeBase, `spec: {replicas: 2}`, "replicas is immutable: it cannot be added or removed"},
	{"volume source added", volumeBase, `spec: {source: {snapshot: s1}}`, "source is immutable: it cannot be added or removed after creation"},
	{"volume claim added", volumeBase, `spec: {claim: {namespace: shop, name: orders}}`, "claim is immutable: it cannot be added or removed after creation"},
	{"volume host authentication added", volumeBase, `spec: {hostAuthentication: DHHMACCHAP}`, "hostAuthentication is immutable: it cannot be added or removed after creation"},
	{"snapshot volume", snapshotBase, `spec: {volume: v2}`, "volume is immutable: a Snapshot is of the Volume it was taken of"},
}

// changes are updates of existing objects the apiserver must accept.
var changes = []mutation{
	{name: "volume grows", base: volumeBase, patch: `spec: {size: 20Gi}`},
	{name: "volume published to a host", base: volumeBase,
		patch: `spec: {publishedHosts: ["nqn.2014-08.org.nvmexpress:uuid:6b1c2d3e-4f50-4a61-8b72-9c8d7e6f5a4b"]}`},
	{name: "pool selects other nodes", base: poolBase, patch: `spec: {nodeSelector: {flint.io/storage: "yes"}}`},
	{name: "osd drains", base: osdBase, patch: `spec: {drain: true}`},
}

// Rules on fields that already exist: they need an object with the field set.
var immutablesOnSetFields = []mutation{
	{"volume replicas changed", volumeBase + "  replicas: 3\n", `spec: {replicas: 2}`, "replicas is immutable"},
	{"volume source changed", volumeBase + "  source: {snapshot: s1}\n", `spec: {source: {snapshot: s2}}`, "source is immutable"},
	{"volume claim changed", volumeBase + "  claim: {namespace: shop, name: orders}\n", `spec: {claim: {name: payments}}`, "claim is immutable: it names the claim"},
	{"volume host authentication changed", volumeBase + "  hostAuthentication: DHHMACCHAP\n", `spec: {hostAuthentication: None}`, "hostAuthentication is immutable: hosts connected with it"},
}

var _ = Describe("Admission", func() {
	Context("samples", func() {
		for _, path := range sampleFiles() {
			It("accepts "+filepath.Base(path), func() {
				for _, obj := range decodeAll(path) {
					Expect(k8sClient.Create(ctx, obj, client.DryRunAll)).To(Succeed(), "%s %s", obj.GetKind(), obj.GetName())
				}
			})
		}
	})

	Context("defaults", func() {
		It("fills a minimal Pool with documented defaults", func() {
			pool := object(`
apiVersion: flint.io/v1alpha1
kind: Pool
spec:
  devices: {driver: aio, nodes: [{node: a, devices: [/dev/nvme1n1]}]}
  osd: {hugepages: {amount: 1Gi}}
`, "")
			Expect(k8sClient.Create(ctx, pool, client.DryRunAll)).To(Succeed())
			Expect(pool.Object["spec"]).To(MatchKeys(IgnoreExtras, Keys{
				"replicas":          BeEquivalentTo(3),
				"failureDomain":     Equal("kubernetes.io/hostname"),
				"overcommitPercent": BeEquivalentTo(100),
				"osd": MatchKeys(IgnoreExtras, Keys{
					"cpus":      BeEquivalentTo(1),
					"memory":    Equal("1Gi"),
					"logLevel":  Equal("warning"),
					"hugepages": HaveKeyWithValue("size", "2Mi"),
				}),
				"network": MatchKeys(IgnoreExtras, Keys{
					"transport": Equal("tcp"),
					"port":      BeEquivalentTo(4420),
				}),
			}))
		})
	})

	Context("rejects at creation", func() {
		for _, c := range rejections {
			It(c.name, func() {
				err := k8sClient.Create(ctx, object(c.base, c.patch), client.DryRunAll)
				expectInvalid(err, c.message)
			})
		}
	})

	Context("refuses changing immutable fields", func() {
		for _, c := range append(append([]mutation{}, immutables...), immutablesOnSetFields...) {
			It(c.name, func() {
				err := update(c.base, c.patch)
				expectInvalid(err, c.message)
			})
		}
	})

	Context("accepts changing mutable fields", func() {
		for _, c := range changes {
			It(c.name, func() {
				Expect(update(c.base, c.patch)).To(Succeed())
			})
		}
	})

	// Every CEL rule in the CRDs must be proven by a case above: a rule that
	// is removed makes its case fail, and a rule that is added without a case
	// fails here.
	It("has a case for every CEL rule in the CRDs", func() {
		expected := map[string]bool{}
		for _, c := range rejections {
			expected[c.message] = true
		}
		for _, c := range append(append([]mutation{}, immutables...), immutablesOnSetFields...) {
			expected[c.message] = true
		}
		rules := celMessages()
		Expect(rules).NotTo(BeEmpty())
		for _, msg := range rules {
			Expect(msg).To(SatisfyAny(func() []OmegaMatcher {
				var ms []OmegaMatcher
				for e := range expected {
					ms = append(ms, ContainSubstring(e))
				}
				return ms
			}()...), "no admission case expects the CEL message %q", msg)
		}
	})
})

// expectInvalid asserts that err is the apiserver refusing the object for
// exactly one reason, whose text contains message.
func expectInvalid(err error, message string) {
	GinkgoHelper()
	Expect(err).To(HaveOccurred(), "the apiserver accepted an object it must refuse with %q", message)
	Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
	Expect(err.Error()).To(ContainSubstring(message))
	var status apierrors.APIStatus
	Expect(errors.As(err, &status)).To(BeTrue(), "want an API status error, got %T", err)
	var causes []metav1.StatusCause
	for _, c := range status.Status().Details.Causes {
		// Added whenever a schema error keeps CEL rules from running.
		if !strings.Contains(c.Message, "some validation rules were not checked") {
			causes = append(causes, c)
		}
	}
	Expect(causes).To(HaveLen(1), "the object must break exactly one rule: %v", err)
}

var nameSeq atomic.Int64

// object decodes base, merges patch over it and gives it a fresh name.
func object(base, patch string) *unstructured.Unstructured {
	GinkgoHelper()
	var obj, over map[string]any
	Expect(yaml.Unmarshal([]byte(base), &obj)).To(Succeed())
	Expect(yaml.Unmarshal([]byte(patch), &over)).To(Succeed())
	mergePatch(obj, over)
	u := &unstructured.Unstructured{Object: obj}
	u.SetName(fmt.Sprintf("t%d", nameSeq.Add(1)))
	return u
}

// mergePatch applies a JSON merge patch (RFC 7386) to dst.
func mergePatch(dst, patch map[string]any) {
	for k, v := range patch {
		switch pv := v.(type) {
		case nil:
			delete(dst, k)
		case map[string]any:
			sub, ok := dst[k].(map[string]any)
			if !ok {
				sub = map[string]any{}
				dst[k] = sub
			}
			mergePatch(sub, pv)
		default:
			dst[k] = v
		}
	}
}

// update creates base, then writes it again with patch merged over it and
// returns the apiserver's answer to that update.
func update(base, patch string) error {
	GinkgoHelper()
	obj := object(base, "")
	Expect(k8sClient.Create(ctx, obj)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, obj))).To(Succeed()) })
	var over map[string]any
	Expect(yaml.Unmarshal([]byte(patch), &over)).To(Succeed())
	mergePatch(obj.Object, over)
	return k8sClient.Update(ctx, obj)
}

func sampleFiles() []string {
	paths, err := filepath.Glob(filepath.Join(samplesDir, "*.yaml"))
	if err != nil {
		panic(err)
	}
	var samples []string
	for _, p := range paths {
		if filepath.Base(p) != "kustomization.yaml" {
			samples = append(samples, p)
		}
	}
	if len(samples) == 0 {
		panic("no samples in " + samplesDir)
	}
	return samples
}

func decodeAll(path string) []*unstructured.Unstructured {
	GinkgoHelper()
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	var objs []*unstructured.Unstructured
	for _, doc := range strings.Split(string(data), "\n---") {
		var obj map[string]any
		Expect(yaml.Unmarshal([]byte(doc), &obj)).To(Succeed())
		if obj != nil {
			objs = append(objs, &unstructured.Unstructured{Object: obj})
		}
	}
	Expect(objs).NotTo(BeEmpty(), "no objects in %s", path)
	return objs
}

// celMessages lists the message of every x-kubernetes-validations rule in
// the CRDs.
func celMessages() []string {
	GinkgoHelper()
	paths, err := filepath.Glob(filepath.Join(crdDir, "*.yaml"))
	Expect(err).NotTo(HaveOccurred())
	var msgs []string
	for _, p := range paths {
		data, err := os.ReadFile(p)
		Expect(err).NotTo(HaveOccurred())
		var crd apiextensionsv1.CustomResourceDefinition
		Expect(yaml.Unmarshal(data, &crd)).To(Succeed())
		for _, v := range crd.Spec.Versions {
			msgs = append(msgs, schemaMessages(v.Schema.OpenAPIV3Schema)...)
		}
	}
	return msgs
}

func schemaMessages(s *apiextensionsv1.JSONSchemaProps) []string {
	if s == nil {
		return nil
	}
	var msgs []string
	for _, r := range s.XValidations {
		msgs = append(msgs, r.Message)
	}
	for _, p := range s.Properties {
		msgs = append(msgs, schemaMessages(&p)...)
	}
	if s.Items != nil {
		msgs = append(msgs, schemaMessages(s.Items.Schema)...)
	}
	if s.AdditionalProperties != nil {
		msgs = append(msgs, schemaMessages(s.AdditionalProperties.Schema)...)
	}
	return msgs
}
