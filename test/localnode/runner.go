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

// Package localnode plays the kubelet for OSD pods on this machine, where
// there is no kubelet: every OSD pod's agent runs as a real osd-agent
// process, its SPDK as a Target of the SPDK double or a real flint_tgt, on a
// loopback address of its own; the pod's status is set as a kubelet would. Pods that are
// deleted have their processes stopped and are then removed. The envtest
// suites and `make run` use it.
package localnode

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/controllers/osd"
	"github.com/flint-io/flint/internal/spdk/spdklab"
	"github.com/flint-io/flint/internal/spdk/spdktest"
)

// Runner runs the OSD pods of a namespace.
type Runner struct {
	Client    client.Client
	Namespace string
	// AgentBinary is a built osd-agent.
	AgentBinary string
	// Dir holds each pod's socket, certificates and logs; keep it short,
	// Unix socket paths are.
	Dir string
	// StartSPDK runs one pod's SPDK as its container would start.
	StartSPDK func(Launch) (SPDK, error)
	// Subnet is the /24 of loopback addresses pods get (default
	// 127.0.1): suites that run at once need their own.
	Subnet string
	// Pools limits the runner to the OSD pods of these Pools; empty runs
	// every OSD pod.
	Pools []string
	// ProbeInterval is how often each agent probes SPDK (--probe-interval;
	// default 200ms, so that tests see an SPDK restart at once).
	ProbeInterval time.Duration

	mu   sync.Mutex
	pods map[types.UID]*pod
	// held are the pods that do not start here, as on a cordoned node.
	held map[string]bool
	// ended are the deleted pods whose processes this runner stopped and
	// which it has not removed yet.
	ended map[types.UID]bool
	next  int
	// nextCPU is where the next pod's cores start, round the machine's.
	nextCPU int
}

// Launch is how a pod's SPDK container starts, made local.
type Launch struct {
	Socket string
	// Command is the container's command and arguments (osd-agent
	// exec-spdk …) with its paths and addresses made local; the SPDK
	// application is the starter's to name (--spdk-binary).
	Command []string
	// Fence is the command of the fence probe's server (osd-agent
	// serve-fence …), which exec-spdk starts beside SPDK: a starter that
	// runs no exec-spdk runs it.
	Fence []string
	// CPUs are the cores the container gets, as taskset takes them: the
	// kubelet's static CPU manager would give whole cores.
	CPUs string
}

// SPDK is one pod's SPDK application.
type SPDK interface {
	// Kill stops it the way SIGKILL does.
	Kill()
	// Restart starts it again with an empty configuration.
	Restart() error
}

// DoubleSPDK starts Targets of the SPDK double on fabric, each with the
// fence probe's server beside it.
func DoubleSPDK(fabric *spdktest.Fabric) func(Launch) (SPDK, error) {
	return func(l Launch) (SPDK, error) {
		t, err := fabric.StartTarget(l.Socket)
		if err != nil {
			return nil, err
		}
		fence := exec.Command(l.Fence[0], l.Fence[1:]...)
		if err := startLogged(fence, filepath.Join(filepath.Dir(l.Socket), "fence.log")); err != nil {
			t.Kill()
			return nil, fmt.Errorf("start the fence probe's server: %w", err)
		}
		return &besideFence{SPDK: t, fence: fence}, nil
	}
}

// besideFence is a double's SPDK with the fence probe's server beside it,
// which lives as long as the pod: tests kill and restart the double by
// hand, and the server then answers as it does for an SPDK that is gone.
type besideFence struct {
	SPDK
	fence *exec.Cmd
}

// Stop ends the pod's SPDK and the server.
func (b *besideFence) Stop() {
	_ = b.fence.Process.Kill()
	_ = b.fence.Wait()
	b.Kill()
}

// RealSPDK starts the build tree spdkDir's SPDK application of the pod's
// name (flint_tgt, or nvmf_tgt) as the pod's container does (osd-agent
// exec-spdk with the pod's arguments, which also starts the fence probe's
// server), on the pod's cores, with a
// /var/tmp of its own as a container has: SPDK locks its cores there, and
// pods that share a core here (more OSDs than cores) must not see each
// other's locks. Needs root, for the mount.
func RealSPDK(spdkDir string) func(Launch) (SPDK, error) {
	return func(l Launch) (SPDK, error) {
		// The build's application of the name the pod runs.
		app := spdklab.NvmfTgt
		for _, a := range l.Command {
			if v, ok := strings.CutPrefix(a, "--spdk-binary="); ok {
				app = spdklab.App(filepath.Base(v))
			}
		}
		bin, err := spdklab.AppBinary(spdkDir, app)
		if err != nil {
			return nil, err
		}
		for _, a := range l.Command {
			if strings.HasPrefix(a, "--pci-") {
				return nil, fmt.Errorf("%s: the OSD needs a PCIe device; real SPDK runs OSDs of aio, uring and malloc devices here", a)
			}
		}
		argv := append([]string{"unshare", "--mount", "--", "sh", "-c", `mount -t tmpfs flint-var-tmp /var/tmp && exec "$@"`, "sh", "taskset", "-c", l.CPUs},
			l.Command[0])
		argv = append(argv, localArgs(l.Command[1:], map[string]string{"spdk-binary": bin})...)
		return spdklab.StartCommand(argv, l.Socket)
	}
}

type pod struct {
	name, ip, dir string
	uid           types.UID
	args          []string
	target        SPDK
	// cpus are the cores its SPDK container runs on.
	cpus   string
	cmd    *exec.Cmd
	exited chan struct{}
	// liveness is the SPDK container's liveness probe, run as the kubelet
	// runs it: stopped with the pod.
	liveness *liveness
}

// liveness runs an HTTP probe and restarts SPDK when it fails, as the
// kubelet does for the SPDK container; after every start it first waits
// for the startup probe to pass.
type liveness struct {
	// startup and url are the probes' URLs; startup is "" without one.
	startup, url string
	timeout      time.Duration
	period       time.Duration
	threshold    int
	stop         chan struct{}
	done         chan struct{}

	mu sync.Mutex
	// restarts are when SPDK was restarted: by the probe, or after it exited.
	restarts []time.Time
}

// Run syncs every interval until ctx ends, then stops every pod.
func (r *Runner) Run(ctx context.Context, interval time.Duration) {
	defer r.StopAll()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		_ = r.Sync(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Sync starts the pods that do not run yet and removes the deleted ones.
func (r *Runner) Sync(ctx context.Context) error {
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(r.Namespace), client.MatchingLabels{"app.kubernetes.io/name": "flint-osd"}); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pods == nil {
		r.pods = map[types.UID]*pod{}
	}
	// Pods that are gone or deleted stop first: a pod re-created under the
	// same name runs in the same directory, and the old SPDK's socket,
	// unlinked as it closes, must not take the new one's with it (the
	// apiserver deletes a pod no node took at once, so the old pod and its
	// successor can show in the same pass).
	seen, listed := map[types.UID]bool{}, map[types.UID]bool{}
	for i := range pods.Items {
		p := &pods.Items[i]
		listed[p.UID] = true
		if p.DeletionTimestamp.IsZero() {
			seen[p.UID] = true
		}
	}
	if r.ended == nil {
		r.ended = map[types.UID]bool{}
	}
	for uid := range r.ended {
		if !listed[uid] {
			delete(r.ended, uid)
		}
	}
	for uid := range r.pods {
		if !seen[uid] {
			r.stop(uid)
			r.ended[uid] = true
		}
	}
	var errs []string
	for i := range pods.Items {
		p := &pods.Items[i]
		if !p.DeletionTimestamp.IsZero() {
			if !r.ended[p.UID] && !r.runs(p) {
				continue // another runner's
			}
			// As a kubelet removes a pod it ran: once its processes
			// ended, with a terminal phase and every container
			// terminated.
			if r.ended[p.UID] && r.reportTerminated(ctx, p) != nil {
				continue
			}
			zero := int64(0)
			if err := r.Client.Delete(ctx, p, &client.DeleteOptions{GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &p.UID}}); err == nil || apierrors.IsNotFound(err) {
				delete(r.ended, p.UID)
			}
			continue
		}
		if _, ok := r.pods[p.UID]; ok || !r.runs(p) {
			continue
		}
		if err := r.start(ctx, p); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", p.Name, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("start pods: %s", strings.Join(errs, "; "))
	}
	return nil
}

// start runs p's SPDK double and agent and reports p Running.
func (r *Runner) start(ctx context.Context, p *corev1.Pod) error {
	if err := r.bind(ctx, p); err != nil {
		return err
	}
	var agent *corev1.Container
	var secret string
	for i := range p.Spec.Containers {
		if p.Spec.Containers[i].Name == "agent" {
			agent = &p.Spec.Containers[i]
		}
	}
	for _, v := range p.Spec.Volumes {
		if v.Name == "tls" && v.Secret != nil {
			secret = v.Secret.SecretName
		}
	}
	if agent == nil || secret == "" {
		return fmt.Errorf("pod %s has no agent container or TLS volume", p.Name)
	}
	dir := filepath.Join(r.Dir, p.Name)
	tlsDir := filepath.Join(dir, "tls")
	if err := os.MkdirAll(tlsDir, 0o700); err != nil {
		return err
	}
	var s corev1.Secret
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: secret}, &s); err != nil {
		return fmt.Errorf("read the agent's certificate: %w", err)
	}
	for name, data := range s.Data {
		if err := os.WriteFile(filepath.Join(tlsDir, name), data, 0o600); err != nil {
			return err
		}
	}
	r.next++
	ip := fmt.Sprintf("%s.%d", cmp.Or(r.Subnet, "127.0.1"), r.next)
	socket, leaseFile := filepath.Join(dir, "spdk.sock"), filepath.Join(dir, "lease")
	launch, err := r.launch(p, map[string]string{"spdk-socket": socket, "lease-file": leaseFile, "fence-address": fmt.Sprintf("%s:%d", ip, osd.FencePort)})
	if err != nil {
		return err
	}
	target, err := r.StartSPDK(launch)
	if err != nil {
		return err
	}
	args := localArgs(agent.Args, map[string]string{
		"spdk-socket": socket, "tls-dir": tlsDir, "network-status-file": filepath.Join(dir, "network-status"),
		"grpc-address": fmt.Sprintf("%s:%d", ip, osd.GRPCPort), "http-address": fmt.Sprintf("%s:%d", ip, osd.HTTPPort),
		"probe-interval": cmp.Or(r.ProbeInterval, 200*time.Millisecond).String(), "lease-file": leaseFile,
		"key-dir": filepath.Join(dir, "keys"),
	})
	running := &pod{name: p.Name, uid: p.UID, ip: ip, dir: dir, args: args, target: target, cpus: launch.CPUs}
	if err := r.startAgent(running); err != nil {
		target.Kill()
		return err
	}
	for _, c := range p.Spec.Containers {
		if c.Name == "spdk" && c.LivenessProbe != nil && c.LivenessProbe.HTTPGet != nil {
			running.liveness = &liveness{
				startup:   probeURL(ip, c, c.StartupProbe),
				url:       probeURL(ip, c, c.LivenessProbe),
				timeout:   time.Duration(max(c.LivenessProbe.TimeoutSeconds, 1)) * time.Second,
				period:    time.Duration(max(c.LivenessProbe.PeriodSeconds, 1)) * time.Second,
				threshold: int(max(c.LivenessProbe.FailureThreshold, 1)),
				stop:      make(chan struct{}), done: make(chan struct{}),
			}
			go r.probe(running)
		}
	}
	r.pods[p.UID] = running

	now := metav1.Now()
	before := p.DeepCopy()
	p.Status = corev1.PodStatus{
		Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, HostIP: "127.0.0.1", StartTime: &now,
		// Ready as a kubelet reports it: an eviction then meets the
		// PodDisruptionBudgets that guard healthy pods.
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		},
	}
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
	return r.Client.Status().Patch(ctx, p, client.MergeFrom(before))
}

// launch is how p's SPDK container starts here: its command with local
// paths and addresses (local), hugepages given as ordinary memory of the
// same size (this machine reserves none), and as many of the machine's
// cores as it requests, taken in turn, its CPU limit expanded as the
// kubelet does.
func (r *Runner) launch(p *corev1.Pod, local map[string]string) (Launch, error) {
	for _, c := range p.Spec.Containers {
		if c.Name != "spdk" {
			continue
		}
		cores := int(max(c.Resources.Requests.Cpu().Value(), 1))
		args := localArgs(c.Args, local)
		fence := []string{r.AgentBinary, "serve-fence"}
		for i, a := range args {
			if strings.HasPrefix(a, "--cpus=") {
				args[i] = fmt.Sprintf("--cpus=%d", cores)
			}
			if strings.HasPrefix(a, "--fence-") || strings.HasPrefix(a, "--spdk-socket=") || strings.HasPrefix(a, "--lease-file=") || strings.HasPrefix(a, "--spdk-hang-timeout=") {
				fence = append(fence, a)
			}
			if strings.HasPrefix(a, "--hugepages-bytes=") {
				var mib int64
				for name, q := range c.Resources.Limits {
					if strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
						mib = q.Value() >> 20
					}
				}
				args[i] = fmt.Sprintf("--memory-mib=%d", mib)
			}
		}
		var cpus []string
		for range cores {
			cpus = append(cpus, strconv.Itoa(r.nextCPU%runtime.NumCPU()))
			r.nextCPU++
		}
		return Launch{Socket: local["spdk-socket"], Command: append([]string{r.AgentBinary}, args...), Fence: fence, CPUs: strings.Join(cpus, ",")}, nil
	}
	return Launch{}, fmt.Errorf("pod %s has no spdk container", p.Name)
}

// startAgent runs p's osd-agent, appending to its log.
func (r *Runner) startAgent(p *pod) error {
	cmd := exec.Command(r.AgentBinary, p.args...)
	cmd.Env = append(os.Environ(), "POD_IP="+p.ip, "POD_UID="+string(p.uid))
	if err := startLogged(cmd, filepath.Join(p.dir, "agent.log")); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	p.cmd, p.exited = cmd, exited
	return nil
}

// startLogged starts cmd with its output appended to logPath; it is killed
// when the process that started it ends.
func startLogged(cmd *exec.Cmd, logPath string) error {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer func() { _ = log.Close() }()
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd.Start()
}

// probe runs p's SPDK liveness probe until the pod stops: after threshold
// failures in a row SPDK is killed and started again empty, as the
// kubelet restarts a container whose liveness probe fails.
func (r *Runner) probe(p *pod) {
	l := p.liveness
	defer close(l.done)
	failures := 0
	started := l.startup == ""
	t := time.NewTicker(l.period)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		// SPDK that exited by itself is started again, as the kubelet
		// restarts a container whose process ended.
		if e, ok := p.target.(interface{ Exited() bool }); ok && e.Exited() {
			l.mu.Lock()
			l.restarts = append(l.restarts, time.Now())
			l.mu.Unlock()
			_ = p.target.Restart()
			started = l.startup == ""
			continue
		}
		if !started {
			_, err := httpProbe(l.startup, l.timeout)
			started = err == nil
			continue
		}
		out, err := httpProbe(l.url, l.timeout)
		if err == nil {
			failures = 0
			continue
		}
		if failures++; failures < l.threshold {
			continue
		}
		failures = 0
		l.mu.Lock()
		l.restarts = append(l.restarts, time.Now())
		l.mu.Unlock()
		p.target.Kill()
		_ = os.WriteFile(filepath.Join(p.dir, "spdk-liveness.log"), fmt.Appendf(nil, "%s: liveness probe failed, SPDK restarted: %s\n", time.Now().Format(time.RFC3339Nano), out), 0o600)
		_ = p.target.Restart()
		started = l.startup == ""
	}
}

// probeURL is where the kubelet would send container c's HTTP probe p,
// in a pod at ip; "" without one.
func probeURL(ip string, c corev1.Container, p *corev1.Probe) string {
	if p == nil || p.HTTPGet == nil {
		return ""
	}
	port := p.HTTPGet.Port.IntValue()
	for _, cp := range c.Ports {
		if cp.Name == p.HTTPGet.Port.String() {
			port = int(cp.ContainerPort)
		}
	}
	return fmt.Sprintf("%s://%s:%d%s", strings.ToLower(string(p.HTTPGet.Scheme)), ip, port, p.HTTPGet.Path)
}

// httpProbe fails as the kubelet's does: no answer within timeout, or a
// status outside 200–399. It returns what was answered.
func httpProbe(url string, timeout time.Duration) (string, error) {
	c := http.Client{Timeout: timeout}
	resp, err := c.Get(url)
	if err != nil {
		return err.Error(), err
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return string(body), fmt.Errorf("%s: %s", url, resp.Status)
	}
	return string(body), nil
}

// SPDKRestarts are when pod podName's SPDK was restarted: its liveness
// probe failed, or it exited.
func (r *Runner) SPDKRestarts(podName string) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.named(podName); p != nil && p.liveness != nil {
		p.liveness.mu.Lock()
		defer p.liveness.mu.Unlock()
		return slices.Clone(p.liveness.restarts)
	}
	return nil
}

// FreezeAgent stops (SIGSTOP) or resumes (SIGCONT) pod podName's agent: a
// hung agent, which neither answers the operator nor fences.
func (r *Runner) FreezeAgent(podName string, frozen bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	sig := syscall.SIGCONT
	if frozen {
		sig = syscall.SIGSTOP
	}
	if p := r.named(podName); p != nil {
		return p.cmd.Process.Signal(sig)
	}
	return fmt.Errorf("pod %s does not run here", podName)
}

// RestartAgent kills the osd-agent of pod podName and starts it again, as
// the kubelet restarts a crashed container; its SPDK keeps running.
func (r *Runner) RestartAgent(podName string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.named(podName); p != nil {
		_ = p.cmd.Process.Kill()
		<-p.exited
		return r.startAgent(p)
	}
	return fmt.Errorf("pod %s does not run here", podName)
}

// bind binds p to the node its affinity names, as the scheduler does: the
// apiserver then deletes it gracefully, leaving its removal to this
// runner, as to a kubelet.
func (r *Runner) bind(ctx context.Context, p *corev1.Pod) error {
	if p.Spec.NodeName != "" || p.Spec.Affinity == nil || p.Spec.Affinity.NodeAffinity == nil || p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	for _, term := range p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && len(f.Values) == 1 {
				binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}, Target: corev1.ObjectReference{Kind: "Node", Name: f.Values[0]}}
				if err := r.Client.SubResource("binding").Create(ctx, p, binding); err != nil {
					return fmt.Errorf("bind pod %s to node %s: %w", p.Name, f.Values[0], err)
				}
				return r.Client.Get(ctx, client.ObjectKeyFromObject(p), p)
			}
		}
	}
	return nil
}

// reportTerminated writes p's status as a kubelet does before it removes
// a pod it stopped.
func (r *Runner) reportTerminated(ctx context.Context, p *corev1.Pod) error {
	before := p.DeepCopy()
	now := metav1.Now()
	p.Status.Phase = corev1.PodFailed
	p.Status.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error", FinishedAt: now}},
		})
	}
	return r.Client.Status().Patch(ctx, p, client.MergeFrom(before))
}

// Hold keeps the pods named podName from starting here (held), as a
// cordoned node keeps an OSD pod pinned to it Pending, or lets them start.
func (r *Runner) Hold(podName string, held bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held == nil {
		r.held = map[string]bool{}
	}
	r.held[podName] = held
}

func (r *Runner) runs(p *corev1.Pod) bool {
	return !r.held[p.Name] && (len(r.Pools) == 0 || slices.Contains(r.Pools, p.Labels[flintv1.LabelPool]))
}

// localArgs replaces the in-pod paths and addresses of the agent's flags.
func localArgs(args []string, set map[string]string) []string {
	var out []string
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if _, ok := set[name]; !ok {
			out = append(out, a)
		}
	}
	for name, v := range set {
		out = append(out, "--"+name+"="+v)
	}
	return out
}

func (r *Runner) stop(uid types.UID) {
	p, ok := r.pods[uid]
	if !ok {
		return
	}
	if p.liveness != nil {
		close(p.liveness.stop)
		<-p.liveness.done
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
	if s, ok := p.target.(interface{ Stop() }); ok {
		s.Stop()
	} else {
		p.target.Kill()
	}
	delete(r.pods, uid)
}

// StopAll stops every pod's processes.
func (r *Runner) StopAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for uid := range r.pods {
		r.stop(uid)
	}
}

// Target is the SPDK of a running pod, for tests that kill it.
func (r *Runner) Target(podName string) SPDK {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.named(podName); p != nil {
		return p.target
	}
	return nil
}

// CPUs are the cores the SPDK container of pod podName runs on, as
// taskset lists them; "" when it does not run.
func (r *Runner) CPUs(podName string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p := r.named(podName); p != nil {
		return p.cpus
	}
	return ""
}

// named is the running pod podName, nil when it does not run; r.mu held.
func (r *Runner) named(podName string) *pod {
	for _, p := range r.pods {
		if p.name == podName {
			return p
		}
	}
	return nil
}

// Socket is the SPDK RPC socket of pod podName, for tests that inspect
// what its SPDK holds.
func (r *Runner) Socket(podName string) string {
	return filepath.Join(r.Dir, podName, "spdk.sock")
}
