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

// Command osd-agent runs in every OSD pod. "osd-agent exec-spdk" is the SPDK
// container's entrypoint: it starts nvmf_tgt on exactly the container's
// cores and hugepages. "osd-agent" alone is the agent container: it claims
// the device, owns the lvstore, re-bootstraps SPDK after every restart, and
// serves the OSD's gRPC API over mutual TLS and its metrics and probes.
// "osd-agent serve-fence", which exec-spdk starts beside SPDK, serves the
// SPDK container's liveness probe: it fails when the OSD's lease lapsed
// and SPDK still lets a host reach a volume target, or does not answer,
// and when SPDK has been silent for its hang timeout, so that the kubelet
// stops SPDK.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/api/resource"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/flint-io/flint/internal/cli"
	"github.com/flint-io/flint/internal/fabric"
	"github.com/flint-io/flint/internal/spdk/client"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
	"github.com/flint-io/flint/osd-image/agent/deviceplugin"
	"github.com/flint-io/flint/osd-image/agent/launch"
	"github.com/flint-io/flint/osd-image/agent/lease"
	"github.com/flint-io/flint/osd-image/agent/lifecycle"
	"github.com/flint-io/flint/osd-image/agent/metrics"
	"github.com/flint-io/flint/osd-image/agent/netinfo"
	"github.com/flint-io/flint/osd-image/agent/server"
	"github.com/flint-io/flint/osd-image/agent/storage"
)

const (
	defaultSocket = "/var/run/flint/spdk.sock"
	// defaultLeaseFile is on the emptyDir both containers mount.
	defaultLeaseFile = "/var/run/flint/lease"
	// defaultKeyDir is on the memory-backed emptyDir both containers
	// mount: secrets never reach the node's disk.
	defaultKeyDir = "/var/run/flint-keys"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "exec-spdk":
			execSPDK(os.Args[2:])
			return
		case "serve-fence":
			serveFence(os.Args[2:])
			return
		case "nvme-device-plugin":
			nvmeDevicePlugin(os.Args[2:])
			return
		case "rdma-device-plugin":
			rdmaDevicePlugin(os.Args[2:])
			return
		}
	}
	runAgent(os.Args[1:])
}

func nvmeDevicePlugin(args []string) {
	fs := flag.NewFlagSet("nvme-device-plugin", flag.ContinueOnError)
	p := deviceplugin.Plugin{Log: zap.New().WithName("nvme-device-plugin")}
	var sysfs string
	devicePluginFlags(fs, &p, &sysfs, "flint.io/nvme", "the Pool's devices.resourceName", "vfio group devices")
	p.Discover = func() ([]deviceplugin.Device, error) { return deviceplugin.DiscoverNVMe(sysfs) }
	runDevicePlugin(args, &p, &cli.Command{
		Name:        "osd-agent nvme-device-plugin",
		Summary:     "advertises the node's vfio-bound NVMe controllers to the kubelet",
		Description: "A kubelet device plugin: every NVMe controller (PCI class 0x010802) bound to vfio-pci is one device of --resource-name; a container allocated one gets /dev/vfio/vfio, its IOMMU group's /dev/vfio/N, and its PCI address in PCIDEVICE_<RESOURCE> (what exec-spdk --pci-resource reads). A controller that leaves vfio-pci is reported unhealthy. Registers again when the kubelet restarts.",
		Flags:       fs,
	})
}

func rdmaDevicePlugin(args []string) {
	fs := flag.NewFlagSet("rdma-device-plugin", flag.ContinueOnError)
	p := deviceplugin.Plugin{Log: zap.New().WithName("rdma-device-plugin")}
	var sysfs, names string
	var shared int
	devicePluginFlags(fs, &p, &sysfs, "flint.io/rdma", "the Pool's network.resourceName, with network.hostNetwork", "uverbs and rdma_cm devices")
	fs.IntVar(&shared, "shared", 16, "how many pods may hold each RDMA device at once")
	fs.StringVar(&names, "devices", "", "comma-separated RDMA device names to advertise (as under /sys/class/infiniband); empty for all")
	p.Discover = func() ([]deviceplugin.Device, error) {
		var only []string
		if names != "" {
			only = strings.Split(names, ",")
		}
		return deviceplugin.DiscoverRDMA(sysfs, shared, only)
	}
	runDevicePlugin(args, &p, &cli.Command{
		Name:        "osd-agent rdma-device-plugin",
		Summary:     "advertises the node's RDMA devices to the kubelet, for OSDs on the host network",
		Description: "A kubelet device plugin: each RDMA device (a NIC's RDMA function, or soft-RoCE) is --shared devices of --resource-name, <name>-<i>; a container allocated one gets /dev/infiniband/rdma_cm and the device's /dev/infiniband/uverbsN. For OSD pods with network.hostNetwork, which use the node's own interfaces: an RDMA VF on a Multus network comes from the SR-IOV device plugin instead. A device that disappears is reported unhealthy. Registers again when the kubelet restarts.",
		Flags:       fs,
	})
}

// devicePluginFlags are the flags every device plugin has.
func devicePluginFlags(fs *flag.FlagSet, p *deviceplugin.Plugin, sysfs *string, resource, resourceUse, devNodes string) {
	fs.StringVar(&p.Resource, "resource-name", resource, "the extended resource the devices are advertised as: "+resourceUse)
	fs.StringVar(&p.Dir, "kubelet-dir", pluginapi.DevicePluginPath, "the kubelet's device plugin directory (its kubelet.sock)")
	fs.StringVar(sysfs, "sysfs", "/sys", "the node's sysfs")
	fs.StringVar(&p.Dev, "dev", "/dev", "the node's /dev, as the kubelet sees it (the host paths of the "+devNodes+")")
	fs.DurationVar(&p.Interval, "interval", 5*time.Second, "how often devices are rescanned and the kubelet's restarts noticed")
}

func runDevicePlugin(args []string, p *deviceplugin.Plugin, cmd *cli.Command) {
	cmd.MainArgs(args, func() error {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		return p.Run(ctx)
	})
}

// fenceFlags configure the fence probe's server, which exec-spdk starts
// beside SPDK and which serve-fence runs.
type fenceFlags struct {
	address, socket, leaseFile string
	timeout                    time.Duration
	// hangAfter is how long SPDK may go without answering, lease or not.
	hangAfter time.Duration
	// fd is a listening socket inherited from exec-spdk; -1: listen on
	// address.
	fd int
}

func (f *fenceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.address, "fence-address", ":9442", "where the SPDK container's probes are served over HTTP: /startup and /fence")
	fs.StringVar(&f.socket, "spdk-socket", defaultSocket, "SPDK's JSON-RPC socket, on the volume shared with the agent")
	fs.StringVar(&f.leaseFile, "lease-file", defaultLeaseFile, "the lease the agent keeps")
	fs.DurationVar(&f.timeout, "fence-timeout", time.Second, "how long SPDK may take to answer one probe")
	fs.DurationVar(&f.hangAfter, "spdk-hang-timeout", 0, "fail the fence probe once SPDK, having answered, has not answered for this long, lease or not, so that the kubelet restarts a frozen SPDK; 0: only when the lease lapsed")
	fs.IntVar(&f.fd, "fence-fd", -1, "serve on this inherited listening socket instead of listening on --fence-address (exec-spdk binds the port)")
}

func (f *fenceFlags) args() []string {
	return []string{"--fence-address=" + f.address, "--spdk-socket=" + f.socket, "--lease-file=" + f.leaseFile, "--fence-timeout=" + f.timeout.String(), "--spdk-hang-timeout=" + f.hangAfter.String()}
}

func serveFence(args []string) {
	fs := flag.NewFlagSet("serve-fence", flag.ContinueOnError)
	var f fenceFlags
	f.register(fs)
	cmd := &cli.Command{
		Name:        "osd-agent serve-fence",
		Summary:     "serves the SPDK container's startup and liveness probes",
		Description: "Started by exec-spdk beside SPDK. /startup passes once SPDK answers. /fence passes while the OSD's lease holds, or while SPDK answers and lets no host reach a volume target; it fails when the lease lapsed and SPDK still serves a host (the agent did not fence: it died or hangs) or does not answer (SPDK is frozen), or, lease or not, when SPDK has not answered for --spdk-hang-timeout, and the kubelet then stops SPDK.",
		Flags:       fs,
	}
	cmd.MainArgs(args, func() error {
		log := zap.New().WithName("fence")
		probes := lease.Probes{
			File: lease.File{Path: f.leaseFile}, Timeout: f.timeout, HangAfter: f.hangAfter,
			Started: func(ctx context.Context) error {
				spdk := client.New(f.socket)
				defer func() { _ = spdk.Close() }()
				_, err := spdk.SpdkGetVersion(ctx)
				return err
			},
			HostsAllowed: func(ctx context.Context) ([]string, error) {
				spdk := client.New(f.socket)
				defer func() { _ = spdk.Close() }()
				v, err := storage.VolumesServed(ctx, spdk)
				if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
					return nil, nil // no SPDK listens: none serves a host
				}
				return v, err
			},
			Failed: func(probe string, err error) { log.Info("probe failed", "probe", probe, "reason", err.Error()) },
		}
		srv := &http.Server{Handler: probes.Handler(), ReadHeaderTimeout: 5 * time.Second}
		var lis net.Listener
		var err error
		if f.fd >= 0 {
			lis, err = net.FileListener(os.NewFile(uintptr(f.fd), "fence"))
		} else {
			lis, err = net.Listen("tcp", f.address)
		}
		if err != nil {
			return err
		}
		return srv.Serve(lis)
	})
}

func execSPDK(args []string) {
	fs := flag.NewFlagSet("exec-spdk", flag.ContinueOnError)
	var o launch.Options
	var pciResource, transport, terminationLog, devicePath string
	var cpuLimit int
	var fence fenceFlags
	fence.register(fs)
	fs.StringVar(&o.Binary, "spdk-binary", "/usr/local/bin/flint_tgt", "the SPDK application to run: flint_tgt (nvmf_tgt with Flint's flint_volume bdev module), or nvmf_tgt")
	fs.Int64Var(&o.HugePagesBytes, "hugepages-bytes", 0, "the container's hugepage limit (from the downward API); 0 runs SPDK with --no-huge")
	fs.Int64Var(&o.MemoryMiB, "memory-mib", 0, "memory for SPDK with --no-huge, in MiB")
	fs.BoolVar(&o.InterruptMode, "interrupt-mode", false, "let reactors sleep when idle (for shared cores)")
	fs.IntVar(&cpuLimit, "cpus", 0, "the container's CPU limit in whole cores (from the downward API): SPDK polls at most that many of the container's cores; 0: all of them")
	fs.StringVar(&o.PCIAddress, "pci-address", "", "the NVMe controller's PCI address, when the OSD names it")
	o.DHGroups = launch.DefaultDHGroups
	fs.Func("dhchap-dhgroups", fmt.Sprintf("the Diffie-Hellman groups SPDK's target allows DH-HMAC-CHAP, comma-separated (default %s; empty: all SPDK has): it takes the strongest a host offers", strings.Join(launch.DefaultDHGroups, ",")), func(v string) (err error) {
		o.DHGroups, err = launch.ParseDHGroups(v)
		return err
	})
	fs.StringVar(&devicePath, "device-path", "", "the block device of an aio or uring OSD: claimed exclusively for SPDK, so no other OSD on the node takes it")
	fs.StringVar(&pciResource, "pci-resource", "", "the device plugin resource whose PCIDEVICE_* variable names the NVMe controller")
	fs.StringVar(&transport, "transport", "tcp", "the OSD's NVMe-oF transport, tcp or rdma: rdma needs an RDMA device in the pod")
	fs.StringVar(&terminationLog, "termination-log", "/dev/termination-log", "where a failed preflight check is left for the operator (the container's terminationMessagePath)")
	cmd := &cli.Command{
		Name:        "osd-agent exec-spdk",
		Summary:     "starts SPDK on the container's cores and memory",
		Description: "The SPDK container's entrypoint: reads the container's cpuset (at most --cpus of its cores) and the device plugin's device, checks the node for what SPDK needs (the device bound to vfio-pci with an IOMMU, free hugepages, memlock, an RDMA device for rdma, exclusive cores, a block device no other holds: it claims it for SPDK) and exits with the finding in --termination-log when SPDK could not start, records the rest next to the socket for the agent, starts serve-fence beside SPDK (the container's probes), and replaces itself with SPDK.",
		Flags:       fs,
	}
	cmd.MainArgs(args, func() error {
		o.Socket = fence.socket
		cpus, err := launch.Affinity()
		if err != nil {
			return err
		}
		o.CPUs = launch.Cores(cpus, cpuLimit)
		if pciResource != "" {
			if o.PCIAddress, err = launch.PCIAddressFromEnv(pciResource, os.Getenv); err != nil {
				return err
			}
		}
		host, err := launch.ThisHost()
		if err != nil {
			return err
		}
		findings := launch.Preflight(o, cpus, cpuLimit, transport, host)
		if launch.Fatal(findings) == nil {
			// The server's parent-death signal follows the thread that
			// starts it: the one that then becomes SPDK.
			runtime.LockOSThread()
			taken, err := startFenceServer(fence)
			if err != nil {
				return err
			}
			if taken != nil {
				findings = append(findings, *taken)
			}
		}
		// Claimed after the server started, which so holds no claim.
		if devicePath != "" && launch.Fatal(findings) == nil {
			_, claim, err := launch.ClaimDevice(devicePath)
			if err != nil {
				return err
			}
			if claim != nil {
				findings = append(findings, *claim)
			}
		}
		if f := launch.Fatal(findings); f != nil {
			// The kubelet restarts the container, which checks again: fixing
			// the node is enough.
			if err := os.WriteFile(terminationLog, f.TerminationMessage(), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("%w (and writing %s: %v)", f, terminationLog, err)
			}
			return f
		}
		return launch.Exec(o, findings)
	})
}

// startFenceServer binds the probes' port and runs serve-fence on it
// beside SPDK, in the container: it dies with SPDK. SPDK keeps the
// listening socket too, so that while it runs nothing else on the node
// can take the port and answer for the server: a server that died alone
// leaves probes unanswered, and the kubelet restarts the container. A
// port already taken is a finding.
func startFenceServer(f fenceFlags) (*launch.Finding, error) {
	lis, err := net.Listen("tcp", f.address)
	if err != nil {
		return &launch.Finding{Reason: agentv1.PreflightFencePortInUse, Fatal: true, Message: fmt.Sprintf(
			"the SPDK container cannot serve its probes on %s (%v): another OSD pod on the host network of this node, or another program, has the port; run one host-network OSD per node, or free the port",
			f.address, err)}, nil
	}
	socket, err := lis.(*net.TCPListener).File()
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, append([]string{"serve-fence", "--fence-fd=3"}, f.args()...)...)
	cmd.ExtraFiles = []*os.File{socket} // fd 3
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the fence probe's server: %w", err)
	}
	// SPDK inherits the socket across exec.
	if _, err := unix.FcntlInt(socket.Fd(), unix.F_SETFD, 0); err != nil {
		return nil, fmt.Errorf("keep the probes' port for SPDK: %w", err)
	}
	return nil, nil
}

// agentFlags is the agent's command line; the operator renders it from the
// OSD's spec.
type agentFlags struct {
	uid, driver, devicePath, pciAddress, mallocSize string
	transport, attachment, networkStatusFile        string
	port                                            int
	tuning                                          storage.Tuning
	logLevel, socket, grpcAddress, httpAddress      string
	tlsDir, leaseFile, keyDir                       string
	probeInterval                                   time.Duration
	powerLossProtected                              bool
}

func runAgent(args []string) {
	var f agentFlags
	fs := flag.NewFlagSet("osd-agent", flag.ContinueOnError)
	fs.StringVar(&f.uid, "osd-uid", "", "the OSD's uid; its lvstore is named after it (required)")
	fs.StringVar(&f.driver, "device-driver", "", "pcie, aio, uring or malloc (required)")
	fs.StringVar(&f.devicePath, "device-path", "", "the block device or file, for aio and uring")
	fs.StringVar(&f.pciAddress, "pci-address", "", "the NVMe controller for pcie; default: what the SPDK container recorded from the device plugin")
	fs.BoolVar(&f.powerLossProtected, "power-loss-protection", false, "the pcie device keeps its volatile write cache through a power loss: leave the cache on (default: turn it off)")
	fs.StringVar(&f.mallocSize, "malloc-size", "", "the RAM-backed device's size, for malloc (development only)")
	fs.StringVar(&f.transport, "transport", "tcp", "tcp or rdma")
	fs.IntVar(&f.port, "port", 4420, "the NVMe-oF listener's port")
	fs.StringVar(&f.attachment, "network-attachment", "", "the Multus network (namespace/name) to listen on; default: the pod IP")
	fs.StringVar(&f.networkStatusFile, "network-status-file", "/etc/flint/podinfo/network-status", "Multus' network-status annotation, projected by the downward API")
	tuning := map[string]*uint32{"io-unit-size": &f.tuning.IOUnitSize, "in-capsule-data-size": &f.tuning.InCapsuleDataSize,
		"num-shared-buffers": &f.tuning.NumSharedBuffers, "buf-cache-size": &f.tuning.BufCacheSize, "max-queue-depth": &f.tuning.MaxQueueDepth}
	for name, v := range tuning {
		fs.Func(name, "NVMe-oF transport "+name+"; default: SPDK's", func(s string) error {
			var n uint32
			_, err := fmt.Sscan(s, &n)
			*v = n
			return err
		})
	}
	fs.StringVar(&f.logLevel, "log-level", "warning", "SPDK's log level: error, warning, notice, info or debug")
	fs.StringVar(&f.socket, "spdk-socket", defaultSocket, "SPDK's JSON-RPC socket")
	fs.StringVar(&f.grpcAddress, "grpc-address", ":9440", "where the gRPC API listens")
	fs.StringVar(&f.httpAddress, "http-address", ":9441", "where /metrics (to the metrics client certificate), /healthz and /readyz are served over HTTPS")
	fs.StringVar(&f.tlsDir, "tls-dir", "/etc/flint/tls", "tls.crt, tls.key and the operator's ca.crt; re-read at every handshake")
	fs.DurationVar(&f.probeInterval, "probe-interval", 2*time.Second, "how often SPDK is probed and re-bootstrapped, and the lease checked")
	fs.StringVar(&f.leaseFile, "lease-file", defaultLeaseFile, "where the OSD's lease is kept, for the SPDK container's liveness probe")
	fs.StringVar(&f.keyDir, "key-dir", defaultKeyDir, "where the DH-HMAC-CHAP secrets of the OSD's NVMe-oF links are kept for SPDK: a tmpfs both containers mount; empty refuses links with keys")
	cmd := &cli.Command{
		Name:        "osd-agent",
		Summary:     "claims the OSD's device, owns its lvstore, and serves its gRPC API",
		Description: "Runs in the OSD pod next to the SPDK container (osd-agent exec-spdk), sharing SPDK's JSON-RPC socket through an emptyDir. Serves gRPC over mutual TLS to the operator's certificate, /metrics over HTTPS to the metrics client certificate, and /healthz, /readyz over HTTPS to anyone.",
		Flags:       fs,
	}
	cmd.MainArgs(args, func() error {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		return serve(ctx, f, zap.New().WithName("osd-agent"))
	})
}

// metricsInterval is how old a reading of SPDK a scrape may be served.
const metricsInterval = 5 * time.Second

func serve(ctx context.Context, f agentFlags, log logr.Logger) error {
	if f.uid == "" {
		return errors.New("--osd-uid is required")
	}
	var notReady atomic.Pointer[func() error]
	waiting := func() error { return errors.New("the agent is resolving its device and listen address") }
	notReady.Store(&waiting)
	ready := func() error { return (*notReady.Load())() }

	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	httpTLS, err := server.HTTPTLS(f.tlsDir)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", server.RequireClient(agentv1.MetricsClientName, agentv1.MetricsClientSecret, promhttp.HandlerFor(registry, promhttp.HandlerOpts{})))
	mux.HandleFunc("/healthz", lifecycle.Healthz)
	mux.HandleFunc("/readyz", lifecycle.Readyz(ready))
	httpLis, err := net.Listen("tcp", f.httpAddress)
	if err != nil {
		return fmt.Errorf("listen for HTTP on %s: %w", f.httpAddress, err)
	}
	httpServer := &http.Server{Handler: mux, TLSConfig: httpTLS, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = httpServer.ServeTLS(httpLis, "", "") }()
	defer func() { _ = httpServer.Close() }()

	cfg, err := resolve(ctx, f, log)
	if err != nil {
		return err
	}
	if f.keyDir != "" {
		// SPDK takes a key file only if no one but its user can reach it.
		if err := os.MkdirAll(f.keyDir, 0o700); err != nil {
			return fmt.Errorf("make the key directory (--key-dir): %w", err)
		}
	}
	spdk := client.New(f.socket)
	defer func() { _ = spdk.Close() }()
	o := storage.New(cfg, spdk)
	keeper := lifecycle.New(o, spdk, f.logLevel, log)
	keeperReady := keeper.Ready
	notReady.Store(&keeperReady)
	registry.MustRegister(metrics.NewCollector(struct {
		*client.Client
		*storage.Engine
	}{spdk, o}, metricsInterval))

	grpcLis, err := net.Listen("tcp", f.grpcAddress)
	if err != nil {
		return fmt.Errorf("listen for gRPC on %s: %w", f.grpcAddress, err)
	}
	// Checked every half probe interval, the lease counts as lapsed a
	// whole interval early: the agent has fenced before the SPDK
	// container's probe finds a host let in past the expiry.
	leases, err := lease.New(lease.File{Path: f.leaseFile}, o, time.Now, f.probeInterval)
	if err != nil {
		return err
	}
	registry.MustRegister(metrics.FencedTargets(func() int { return len(leases.Fenced()) }))
	go leases.Run(ctx, f.probeInterval/2, func(err error) {
		log.Error(err, "Fencing failed; the SPDK container's liveness probe stops SPDK")
	})
	g, err := server.Serve(grpcLis, server.New(o, spdk, keeper.Ready, keeper.Warnings, leases, os.Getenv("POD_UID")), f.tlsDir, log.WithName("grpc"))
	if err != nil {
		return err
	}
	defer g.GracefulStop()
	log.Info("serving", "osd", f.uid, "grpc", f.grpcAddress, "http", f.httpAddress, "listener", fmt.Sprintf("%s %s:%d", cfg.Listener.Transport, cfg.Listener.Address, cfg.Listener.Port))
	keeper.Run(ctx, f.probeInterval)
	return nil
}

// resolve turns the flags into the OSD's config, waiting for what the pod
// gets later than the agent starts: the SPDK container's device hand-off
// and Multus' network status.
func resolve(ctx context.Context, f agentFlags, log logr.Logger) (storage.Config, error) {
	for {
		cfg, err := config(f)
		if err == nil {
			return cfg, nil
		}
		var permanent *flagError
		if errors.As(err, &permanent) {
			return storage.Config{}, err
		}
		log.Info("waiting", "reason", err.Error())
		select {
		case <-ctx.Done():
			return storage.Config{}, ctx.Err()
		case <-time.After(f.probeInterval):
		}
	}
}

// flagError is a command line that can never work.
type flagError struct{ msg string }

func (e *flagError) Error() string { return e.msg }

func config(f agentFlags) (storage.Config, error) {
	cfg := storage.Config{UID: f.uid, Tuning: f.tuning, Device: storage.Device{Driver: f.driver, Path: f.devicePath, PCIAddress: f.pciAddress, PowerLossProtected: f.powerLossProtected},
		EpochFile: filepath.Join(filepath.Dir(f.leaseFile), "export-epochs"), MembersFile: filepath.Join(filepath.Dir(f.leaseFile), "target-members"), KeyDir: f.keyDir}
	switch f.driver {
	case storage.DriverPCIe:
		if cfg.Device.PCIAddress == "" {
			h, err := launch.ReadHandoff(filepath.Dir(f.socket))
			if err != nil {
				return cfg, err
			}
			if h.PCIAddress == "" {
				return cfg, &flagError{"the SPDK container got no NVMe device: give it --pci-address or --pci-resource"}
			}
			cfg.Device.PCIAddress = h.PCIAddress
		}
	case storage.DriverAIO, storage.DriverURing:
		if f.devicePath == "" {
			return cfg, &flagError{"--device-path is required for " + f.driver}
		}
	case storage.DriverMalloc:
		q, err := resource.ParseQuantity(f.mallocSize)
		if err != nil || q.Value() < 1<<20 {
			return cfg, &flagError{fmt.Sprintf("--malloc-size %q must be a quantity of at least 1Mi", f.mallocSize)}
		}
		cfg.Device.MallocBytes = uint64(q.Value())
	default:
		return cfg, &flagError{fmt.Sprintf("--device-driver %q is none of pcie, aio, uring, malloc", f.driver)}
	}
	if f.transport != "tcp" && f.transport != "rdma" {
		return cfg, &flagError{fmt.Sprintf("--transport %q is neither tcp nor rdma", f.transport)}
	}
	addr, err := netinfo.ListenAddress(f.attachment, f.networkStatusFile, os.Getenv("POD_IP"))
	if err != nil {
		return cfg, err
	}
	// What the OSD reports as its endpoint ends up in connect strings.
	if err := fabric.ValidateEndpoint(f.transport, addr, int64(f.port)); err != nil {
		return cfg, &flagError{fmt.Sprintf("the listener (--transport, the network's address, --port): %v", err)}
	}
	cfg.Listener = storage.Listener{Transport: f.transport, Address: addr, Port: f.port}
	return cfg, nil
}
