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

package osd

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/agentclient"
)

// PodLabels select every OSD pod.
var PodLabels = map[string]string{"app.kubernetes.io/name": "flint-osd"}

// What the OSD pod exposes and where its parts live. The agent's flags and
// the pod agree on these.
const (
	GRPCPort = 9440
	HTTPPort = 9441
	// FencePort serves the SPDK container's probes, over plain HTTP: they
	// say only whether SPDK must be stopped.
	FencePort = 9442

	// Names of the agent container's ports.
	GRPCPortName    = "grpc"
	MetricsPortName = "metrics"
	NVMeoFPortName  = "nvmf"
	FencePortName   = "fence"

	runDir        = "/var/run/flint"
	leaseFile     = runDir + "/lease"
	keyDir        = "/var/run/flint-keys"
	spdkSocket    = runDir + "/spdk.sock"
	tlsDir        = "/etc/flint/tls"
	podInfoDir    = "/etc/flint/podinfo"
	networkStatus = "network-status"
	agentBinary   = "/usr/local/bin/osd-agent"
	// spdkName is the SPDK container's name.
	spdkName       = "spdk"
	hugePagesDir   = "/dev/hugepages"
	hugePagesLimit = "FLINT_HUGEPAGES_LIMIT"
	cpuLimit       = "FLINT_CPU_LIMIT"

	// annotationSpecHash records the pod spec the operator rendered: a
	// pod rendered from another spec is replaced.
	annotationSpecHash = "flint.io/pod-spec-hash"
	// annotationNetworks is Multus' request for secondary networks.
	annotationNetworks      = "k8s.v1.cni.cncf.io/networks"
	annotationNetworkStatus = "k8s.v1.cni.cncf.io/network-status"
)

// DefaultAgentCPU is the agent container's CPU when PodConfig names none.
var DefaultAgentCPU = resource.MustParse("100m")

// agentResources keep the agent small and outside the exclusive cores: a
// Guaranteed pod needs requests equal to limits in every container, and a
// CPU that is not a whole number of cores keeps the agent in the shared
// pool.
func agentResources(cpu resource.Quantity) corev1.ResourceList {
	if cpu.IsZero() {
		cpu = DefaultAgentCPU
	}
	return corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: resource.MustParse("128Mi")}
}

// CheckAgentCPU refuses an agent CPU the kubelet's static CPU manager
// would make exclusive cores of, taken from SPDK's node.
func CheckAgentCPU(cpu resource.Quantity) error {
	if cpu.Sign() < 0 || !cpu.IsZero() && cpu.MilliValue()%1000 == 0 {
		return fmt.Errorf("an OSD agent's CPU of %s is a whole number of cores, which the static CPU manager would give it for itself: give it a fraction (such as 250m)", cpu.String())
	}
	return nil
}

// PodConfig is what the operator's deployment decides about OSD pods.
type PodConfig struct {
	Namespace string
	// Image holds SPDK and osd-agent.
	Image string
	// ImagePullSecrets name the Secrets of Namespace that Image is pulled
	// with.
	ImagePullSecrets  []string
	PriorityClassName string
	ServiceAccount    string
	// FenceProbeTimeout bounds one run of the fence probe (FenceProbe).
	FenceProbeTimeout time.Duration
	// SPDKHangTimeout, when set, has the fence probe fail once SPDK has
	// not answered for that long, lease or not.
	SPDKHangTimeout time.Duration
	// AgentCPU is the agent container's CPU, request and limit (it renews
	// the lease: throttled for long, it lets it lapse); DefaultAgentCPU
	// when zero.
	AgentCPU resource.Quantity
}

// TLSSecretName is the Secret with an OSD agent's certificate.
func TLSSecretName(osdName string) string { return "osd-" + osdName + "-tls" }

// RenderPod is the pod that runs osd: SPDK on dedicated cores with its
// hugepages and device, and the agent beside it.
func RenderPod(osd *flintv1.OSD, cfg PodConfig) (*corev1.Pod, error) {
	spdk, err := spdkContainer(osd, cfg)
	if err != nil {
		return nil, err
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: agentclient.PodName(osd), Namespace: cfg.Namespace,
			Labels: map[string]string{
				"app.kubernetes.io/name": PodLabels["app.kubernetes.io/name"], "app.kubernetes.io/managed-by": "flint-operator",
				flintv1.LabelOSD: osd.Name, flintv1.LabelPool: osd.Spec.Pool,
			},
			Annotations: map[string]string{},
		},
		Spec: corev1.PodSpec{
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{osd.Spec.NodeName}}},
				}}},
			}},
			Containers:                    []corev1.Container{spdk, agentContainer(osd, cfg)},
			Volumes:                       volumes(osd),
			HostNetwork:                   osd.Spec.Network.HostNetwork,
			ImagePullSecrets:              pullSecrets(cfg.ImagePullSecrets),
			Tolerations:                   osd.Spec.Scheduling.Tolerations,
			PriorityClassName:             cmp.Or(osd.Spec.Scheduling.PriorityClassName, cfg.PriorityClassName),
			ServiceAccountName:            cfg.ServiceAccount,
			AutomountServiceAccountToken:  ptr.To(false),
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
		},
	}
	if osd.Spec.Network.HostNetwork {
		pod.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	}
	if a := osd.Spec.Network.Attachment; a != "" && !osd.Spec.Network.HostNetwork {
		pod.Annotations[annotationNetworks] = a
	}
	hash, err := specHash(pod)
	if err != nil {
		return nil, err
	}
	pod.Annotations[annotationSpecHash] = hash
	return pod, nil
}

func pullSecrets(names []string) []corev1.LocalObjectReference {
	var refs []corev1.LocalObjectReference
	for _, n := range names {
		refs = append(refs, corev1.LocalObjectReference{Name: n})
	}
	return refs
}

func specHash(pod *corev1.Pod) (string, error) {
	b, err := json.Marshal(struct {
		Spec        corev1.PodSpec
		Annotations map[string]string
	}{pod.Spec, pod.Annotations})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8]), nil
}

func spdkContainer(osd *flintv1.OSD, cfg PodConfig) (corev1.Container, error) {
	r := osd.Spec.Resources
	memory := resource.MustParse("1Gi")
	if r.Memory != nil {
		memory = *r.Memory
	}
	res := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(max(r.CPUs, 1)), resource.DecimalSI),
		corev1.ResourceMemory: memory,
	}
	// SPDK polls as many cores as the container may use: without the
	// kubelet's static CPU manager its cpuset is the whole node.
	fence := FenceProbe(cfg.FenceProbeTimeout)
	args := []string{"exec-spdk", "--spdk-binary=/usr/local/bin/flint_tgt", "--spdk-socket=" + spdkSocket, "--cpus=$(" + cpuLimit + ")",
		// SPDK's answer leaves a second of the probe's timeout for the rest.
		fmt.Sprintf("--fence-address=:%d", FencePort), "--lease-file=" + leaseFile, fmt.Sprintf("--fence-timeout=%ds", fence.TimeoutSeconds-1)}
	if cfg.SPDKHangTimeout > 0 {
		args = append(args, "--spdk-hang-timeout="+cfg.SPDKHangTimeout.String())
	}
	c := corev1.Container{
		Name: spdkName, Image: cfg.Image, Command: []string{agentBinary},
		Ports: []corev1.ContainerPort{{Name: FencePortName, ContainerPort: FencePort}},
		Env: []corev1.EnvVar{{Name: cpuLimit, ValueFrom: &corev1.EnvVarSource{
			ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: spdkName, Resource: "limits.cpu"},
		}}},
		VolumeMounts:    []corev1.VolumeMount{{Name: "run", MountPath: runDir}, {Name: "keys", MountPath: keyDir, ReadOnly: true}},
		SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
	}
	if r.HugePages != nil {
		res[r.HugePages.ResourceName()] = r.HugePages.Amount
		args = append(args, "--hugepages-bytes=$("+hugePagesLimit+")")
		c.Env = append(c.Env, corev1.EnvVar{Name: hugePagesLimit, ValueFrom: &corev1.EnvVarSource{
			ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: spdkName, Resource: "limits." + string(r.HugePages.ResourceName())},
		}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "hugepages", MountPath: hugePagesDir})
	} else {
		// SPDK's whole memory comes out of the container's: leave a quarter
		// for its heap outside DPDK.
		args = append(args, "--memory-mib="+strconv.FormatInt(memory.Value()>>20*3/4, 10))
	}
	// Pinning DMA memory needs IPC_LOCK, for vfio and for RDMA memory
	// registration alike.
	if osd.Spec.Device.Driver == flintv1.DriverPCIe || osd.Spec.Network.Transport == flintv1.TransportRDMA {
		c.SecurityContext.Capabilities.Add = []corev1.Capability{"IPC_LOCK"}
	}
	d := osd.Spec.Device
	switch d.Driver {
	case flintv1.DriverPCIe:
		if d.ResourceName != "" {
			res[corev1.ResourceName(d.ResourceName)] = resource.MustParse("1")
			args = append(args, "--pci-resource="+d.ResourceName)
		} else {
			args = append(args, "--pci-address="+d.PCIAddress)
		}
	case flintv1.DriverAIO, flintv1.DriverURing:
		// exec-spdk claims the device for SPDK: a second OSD on it fails.
		args = append(args, "--device-path="+d.Path)
		c.VolumeMounts = append(c.VolumeMounts, deviceMount(d.Path))
		if needsPrivilege(d.Path) {
			privileged(c.SecurityContext)
		}
	case flintv1.DriverMalloc:
	default:
		return c, fmt.Errorf("device driver %q is none of pcie, aio, uring, malloc", d.Driver)
	}
	if n := osd.Spec.Network; n.Transport == flintv1.TransportRDMA && n.ResourceName != "" {
		res[corev1.ResourceName(n.ResourceName)] = resource.MustParse("1")
	}
	if osd.Spec.SPDK.InterruptMode {
		args = append(args, "--interrupt-mode")
	}
	// exec-spdk checks that the pod has an RDMA device for rdma.
	args = append(args, "--transport="+string(osd.Spec.Network.Transport))
	c.Args = args
	c.Resources = corev1.ResourceRequirements{Requests: res, Limits: res}
	c.StartupProbe, c.LivenessProbe = spdkStartedProbe(fence.TimeoutSeconds), fence
	return c, nil
}

// spdkStartedProbe holds the fence probe back while SPDK starts (hugepage
// set-up and device attach take seconds): until SPDK first answers it
// serves nothing, since only the agent configures targets. SPDK that does
// not answer within five minutes is restarted. Its server waits for SPDK
// as long as for the fence probe, timeoutSeconds less one.
func spdkStartedProbe(timeoutSeconds int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler:  fenceServer("/startup"),
		PeriodSeconds: 1, TimeoutSeconds: timeoutSeconds, FailureThreshold: 300,
	}
}

// FenceProbe is fencing's dead man's switch (docs/volumes.md): once the
// OSD's lease lapsed, the kubelet stops SPDK if a volume target still lets
// a host in (the agent died or hangs) or SPDK does not say (it is frozen).
// exec-spdk serves it beside SPDK (osd-agent serve-fence), so that the
// kubelet starts no process on SPDK's cores every second. A probe that
// outlasts timeout (whole seconds, at least 2) fails too, and kills SPDK:
// on a node that can be too busy to answer in time, raise it; FenceTime
// says what it costs.
func FenceProbe(timeout time.Duration) *corev1.Probe {
	seconds := max(int32((timeout+time.Second-1)/time.Second), 2)
	return &corev1.Probe{
		ProbeHandler:  fenceServer("/fence"),
		PeriodSeconds: 1, TimeoutSeconds: seconds, FailureThreshold: 1,
		TerminationGracePeriodSeconds: ptr.To[int64](1),
	}
}

func fenceServer(path string) corev1.ProbeHandler {
	return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString(FencePortName), Scheme: corev1.URISchemeHTTP}}
}

// FenceTime is the longest a lapsed OSD whose agent cannot fence takes to
// stop serving under p: a period until the probe runs, its timeout, and
// the kill's grace period.
func FenceTime(p *corev1.Probe) time.Duration {
	return time.Duration(p.PeriodSeconds+p.TimeoutSeconds+int32(*p.TerminationGracePeriodSeconds)) * time.Second
}

// needsPrivilege: a container opens a host block device only when
// privileged (a hostPath mount adds no device cgroup rule); a file
// needs no privilege.
func needsPrivilege(path string) bool { return strings.HasPrefix(path, "/dev/") }

// privileged makes sc privileged, which implies escalation.
func privileged(sc *corev1.SecurityContext) {
	sc.Privileged = ptr.To(true)
	sc.AllowPrivilegeEscalation = nil
}

func deviceMount(path string) corev1.VolumeMount {
	return corev1.VolumeMount{Name: "device", MountPath: path}
}

func agentContainer(osd *flintv1.OSD, cfg PodConfig) corev1.Container {
	s := osd.Spec
	args := []string{
		"--osd-uid=" + string(osd.UID),
		"--device-driver=" + string(s.Device.Driver),
		"--transport=" + string(s.Network.Transport),
		"--port=" + strconv.Itoa(int(port(osd))),
		"--log-level=" + string(logLevel(osd)),
		"--spdk-socket=" + spdkSocket,
		"--lease-file=" + leaseFile,
		"--key-dir=" + keyDir,
		fmt.Sprintf("--grpc-address=:%d", GRPCPort),
		fmt.Sprintf("--http-address=:%d", HTTPPort),
		"--tls-dir=" + tlsDir,
		"--network-status-file=" + podInfoDir + "/" + networkStatus,
	}
	switch s.Device.Driver {
	case flintv1.DriverPCIe:
		if s.Device.PCIAddress != "" {
			args = append(args, "--pci-address="+s.Device.PCIAddress)
		}
		if s.PowerLossProtection {
			args = append(args, "--power-loss-protection")
		}
	case flintv1.DriverAIO, flintv1.DriverURing:
		args = append(args, "--device-path="+s.Device.Path)
	case flintv1.DriverMalloc:
		args = append(args, "--malloc-size="+s.Device.Malloc.Size.String())
	}
	if a := s.Network.Attachment; a != "" && !s.Network.HostNetwork {
		args = append(args, "--network-attachment="+a)
	}
	for _, t := range []struct {
		flag  string
		value *int32
	}{
		{"io-unit-size", s.NVMf.IOUnitSize}, {"in-capsule-data-size", s.NVMf.InCapsuleDataSize},
		{"num-shared-buffers", s.NVMf.NumSharedBuffers}, {"buf-cache-size", s.NVMf.BufCacheSize}, {"max-queue-depth", s.NVMf.MaxQueueDepth},
	} {
		if t.value != nil {
			args = append(args, fmt.Sprintf("--%s=%d", t.flag, *t.value))
		}
	}
	c := corev1.Container{
		Name: "agent", Image: cfg.Image, Command: []string{agentBinary}, Args: args,
		// POD_UID: the agent serves only the calls meant for its pod
		// (agentv1.PodUIDHeader).
		Env: []corev1.EnvVar{
			{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "POD_UID", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.uid"}}},
		},
		Ports: []corev1.ContainerPort{
			{Name: GRPCPortName, ContainerPort: GRPCPort}, {Name: MetricsPortName, ContainerPort: HTTPPort}, {Name: NVMeoFPortName, ContainerPort: port(osd)},
		},
		Resources: corev1.ResourceRequirements{Requests: agentResources(cfg.AgentCPU), Limits: agentResources(cfg.AgentCPU)},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "run", MountPath: runDir}, {Name: "keys", MountPath: keyDir}, {Name: "tls", MountPath: tlsDir, ReadOnly: true},
			{Name: "podinfo", MountPath: podInfoDir, ReadOnly: true},
		},
		ReadinessProbe: &corev1.Probe{ProbeHandler: httpGet("/readyz"), PeriodSeconds: 5},
		LivenessProbe:  &corev1.Probe{ProbeHandler: httpGet("/healthz"), PeriodSeconds: 10, FailureThreshold: 6},
		SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		},
	}
	// The agent reads the first MiB of a kernel device before it lets SPDK
	// write an lvstore there.
	if p := s.Device.Path; p != "" {
		c.VolumeMounts = append(c.VolumeMounts, deviceMount(p))
		if needsPrivilege(p) {
			privileged(c.SecurityContext)
		}
	}
	return c
}

func httpGet(path string) corev1.ProbeHandler {
	return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(HTTPPort), Scheme: corev1.URISchemeHTTPS}}
}

func volumes(osd *flintv1.OSD) []corev1.Volume {
	v := []corev1.Volume{
		{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		// The DH-HMAC-CHAP secrets the agent gives SPDK: in memory, never
		// on the node's disk.
		{Name: "keys", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: TLSSecretName(osd.Name), DefaultMode: ptr.To[int32](0o400)}}},
		{Name: "podinfo", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{{
			Path: networkStatus, FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + annotationNetworkStatus + "']"},
		}}}}},
	}
	if hp := osd.Spec.Resources.HugePages; hp != nil {
		v = append(v, corev1.Volume{Name: "hugepages", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
			Medium: corev1.StorageMedium("HugePages-" + string(hp.PageSize())),
		}}})
	}
	if p := osd.Spec.Device.Path; p != "" {
		t := corev1.HostPathFile
		if needsPrivilege(p) {
			t = corev1.HostPathBlockDev
		}
		v = append(v, corev1.Volume{Name: "device", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: p, Type: &t}}})
	}
	return v
}

func port(osd *flintv1.OSD) int32 {
	if osd.Spec.Network.Port != 0 {
		return osd.Spec.Network.Port
	}
	return 4420
}

func logLevel(osd *flintv1.OSD) flintv1.LogLevel {
	if osd.Spec.SPDK.LogLevel != "" {
		return osd.Spec.SPDK.LogLevel
	}
	return "warning"
}
