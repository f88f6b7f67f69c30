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

// Package spdklab starts SPDK applications for tests: Targets of the
// in-process double, or real nvmf_tgt processes when FLINT_SPDK_DIR names
// an SPDK build tree. Tests written against a Lab run unchanged on both;
// `make run` starts Processes directly.
package spdklab

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/flint-io/flint/internal/spdk/client"
	"github.com/flint-io/flint/internal/spdk/spdktest"
	"github.com/flint-io/flint/osd-image/agent/launch"
)

// Target is one SPDK application under test: a real nvmf_tgt when
// FLINT_SPDK_DIR names an SPDK build tree, else a Target of the double.
type Target struct {
	Name   string
	Client *client.Client
	// Kill stops the application the way SIGKILL does.
	Kill func()
	// Restart starts it again with an empty configuration.
	Restart func(t *testing.T)
	// Freeze stops (SIGSTOP) or resumes (SIGCONT) a real nvmf_tgt; nil
	// for the double, which cannot freeze.
	Freeze func(frozen bool)
}

// Lab is n targets that can reach each other over loopback NVMe/TCP.
type Lab struct {
	Dir     string
	Targets []*Target
	// Real says the targets are nvmf_tgt processes.
	Real bool
}

// App is the SPDK application a Lab runs on real SPDK.
type App string

const (
	// NvmfTgt is SPDK's own target, which the double answers as: the
	// contract suite's.
	NvmfTgt App = "nvmf_tgt"
	// FlintTgt is the OSD pod's: nvmf_tgt with Flint's flint_volume bdev
	// module (osd-image/flinttgt), which make spdk builds beside it.
	FlintTgt App = "flint_tgt"
)

// New starts n nvmf_tgt targets (or the double's) that reach each other
// over loopback NVMe/TCP.
func New(t testing.TB, n int) *Lab { return NewOf(t, n, NvmfTgt) }

// NewOf starts n targets of app on real SPDK, of the double without
// FLINT_SPDK_DIR, that reach each other over loopback NVMe/TCP. The double
// answers as nvmf_tgt whatever app is.
func NewOf(t testing.TB, n int, app App) *Lab {
	t.Helper()
	// Unix socket paths must stay short.
	dir, err := os.MkdirTemp("", "flint-contract-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	l := &Lab{Dir: dir}
	if spdkDir := os.Getenv("FLINT_SPDK_DIR"); spdkDir != "" {
		bin, err := AppBinary(spdkDir, app)
		if err != nil {
			t.Fatal(err)
		}
		l.Real = true
		for i := range n {
			l.Targets = append(l.Targets, startReal(t, bin, filepath.Join(dir, fmt.Sprintf("t%d.sock", i)), fmt.Sprintf("t%d", i)))
		}
		return l
	}
	fabric := spdktest.NewFabric()
	for i := range n {
		socket := filepath.Join(dir, fmt.Sprintf("t%d.sock", i))
		dt, err := fabric.StartTarget(socket)
		if err != nil {
			t.Fatal(err)
		}
		c := client.New(socket)
		t.Cleanup(func() { _ = c.Close(); dt.Kill() })
		l.Targets = append(l.Targets, &Target{
			Name: fmt.Sprintf("t%d", i), Client: c, Kill: dt.Kill,
			Restart: func(t *testing.T) {
				if err := dt.Restart(); err != nil {
					t.Fatal(err)
				}
			},
		})
	}
	return l
}

// startReal runs bin (nvmf_tgt or flint_tgt) as a Process and stops it
// when the test ends.
func startReal(t testing.TB, bin, socket, name string) *Target {
	t.Helper()
	p, err := startBinary(bin, socket)
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(socket)
	t.Cleanup(func() { _ = c.Close(); p.Kill() })
	return &Target{Name: name, Client: c, Kill: p.Kill, Restart: func(t *testing.T) {
		if err := p.Restart(); err != nil {
			t.Fatal(err)
		}
	}, Freeze: p.Freeze}
}

// Process is a real SPDK application on a private socket.
type Process struct {
	argv   []string
	socket string
	cmd    *exec.Cmd
	// exited is closed once the process is reaped; waitErr is then its
	// exit status.
	exited  chan struct{}
	waitErr error
	// pid is the running process's, 0 when none: faults signal it from
	// goroutines other than the one that restarts it.
	pid atomic.Int64
}

// StartProcess runs spdkDir's nvmf_tgt without hugepages on core 0 on
// socket, logging beside it, and returns once it answers. Its target
// allows the DH groups an OSD's does.
func StartProcess(spdkDir, socket string) (*Process, error) {
	bin, err := Binary(spdkDir)
	if err != nil {
		return nil, err
	}
	return startBinary(bin, socket)
}

// startBinary is StartProcess of the SPDK application bin.
func startBinary(bin, socket string) (*Process, error) {
	configPath := socket + ".json"
	if err := launch.WriteStartupConfig(configPath, launch.Options{DHGroups: launch.DefaultDHGroups}); err != nil {
		return nil, err
	}
	return StartCommand([]string{bin, "--no-huge", "-s", "2048", "-m", "0x1", "--disable-cpumask-locks", "--json", configPath, "-r", socket}, socket)
}

// Binary is the build tree's nvmf_tgt.
func Binary(spdkDir string) (string, error) { return AppBinary(spdkDir, NvmfTgt) }

// AppBinary is the build tree's app (make spdk builds both).
func AppBinary(spdkDir string, app App) (string, error) {
	bin := filepath.Join(spdkDir, "build", "bin", string(app))
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("FLINT_SPDK_DIR=%s has no build/bin/%s: take make spdk's build, which has nvmf_tgt and flint_tgt (%w)", spdkDir, app, err)
	}
	return bin, nil
}

// StartCommand runs argv, which starts SPDK on socket, logging beside the
// socket, and returns once SPDK answers.
func StartCommand(argv []string, socket string) (*Process, error) {
	p := &Process{argv: argv, socket: socket}
	return p, p.start()
}

func (p *Process) start() error {
	_ = os.Remove(p.socket)
	// Appended to, so that a restart keeps what the last run said.
	logPath := p.socket + ".log"
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer func() { _ = log.Close() }()
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", p.argv[0], err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited = cmd, exited
	p.pid.Store(int64(cmd.Process.Pid))
	go func() { p.waitErr = cmd.Wait(); close(exited) }()
	return p.waitReady(logPath)
}

// Kill stops SPDK the way SIGKILL does.
func (p *Process) Kill() {
	p.pid.Store(0)
	if p.cmd != nil {
		_ = p.cmd.Process.Kill()
		<-p.exited // killed: its exit status says nothing
		p.cmd = nil
	}
}

// Terminate stops SPDK the way SIGTERM does, a clean shutdown, and waits
// for it to end (killing it after timeout).
func (p *Process) Terminate(timeout time.Duration) {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if !p.WaitExit(timeout) {
		p.Kill()
	}
	p.pid.Store(0)
	p.cmd = nil
}

// WaitExit waits up to timeout for SPDK to end by itself; it reports
// whether it did.
func (p *Process) WaitExit(timeout time.Duration) bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return true
	case <-time.After(timeout):
		return false
	}
}

// ExitCode is the status SPDK exited with by itself; -1 while it runs.
func (p *Process) ExitCode() int {
	if p.cmd == nil || !p.Exited() {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// Exited reports whether SPDK ended by itself (not by Kill).
func (p *Process) Exited() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Freeze stops (SIGSTOP) or resumes (SIGCONT) SPDK.
func (p *Process) Freeze(frozen bool) {
	sig := syscall.SIGCONT
	if frozen {
		sig = syscall.SIGSTOP
	}
	_ = p.Signal(sig)
}

// Signal sends sig to SPDK as a fault from outside would: one that ends
// it leaves it Exited, for whoever supervises it to start it again.
func (p *Process) Signal(sig syscall.Signal) error {
	pid := p.pid.Load()
	if pid == 0 {
		return fmt.Errorf("SPDK on %s does not run", p.socket)
	}
	return syscall.Kill(int(pid), sig)
}

// Restart kills SPDK and starts it again with an empty configuration.
func (p *Process) Restart() error {
	p.Kill()
	return p.start()
}

// waitReady waits until SPDK answers, and fails at once with its log when
// the process exits first.
func (p *Process) waitReady(logPath string) error {
	c := client.New(p.socket)
	defer func() { _ = c.Close() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-p.exited:
			p.pid.Store(0)
			p.cmd = nil
			data, _ := os.ReadFile(logPath)
			return fmt.Errorf("SPDK exited before answering (%v); set LD_LIBRARY_PATH if it cannot find its libraries:\n%s", p.waitErr, data)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := c.SpdkGetVersion(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			p.Kill()
			data, _ := os.ReadFile(logPath)
			return fmt.Errorf("SPDK did not answer within 60s: %v\n%s", err, data)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Image makes a sparse file of size bytes for an aio bdev.
func (l *Lab) Image(t testing.TB, name string, size int64) string {
	t.Helper()
	path := filepath.Join(l.Dir, name+".img")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	return path
}

// FreePort finds a loopback TCP port for an NVMe-oF listener, below the
// kernel's ephemeral range when it can. A port from that range can be
// taken, between this check and SPDK's listen, as the local port of one
// of the lab's own outgoing connections (an initiator's to another OSD),
// and SPDK then refuses the listener ("Invalid parameters"): a CI run of
// 2026-12-01 lost TestThreeReplicasSurviveALostReplica so.
func FreePort(t testing.TB) string {
	t.Helper()
	const lowest = 10000
	if first := ephemeralFirst(); first > lowest+1000 {
		for range 100 {
			port := strconv.Itoa(lowest + rand.IntN(first-lowest))
			if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port)); err == nil {
				_ = ln.Close()
				return port
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

// ephemeralFirst is the first port of the kernel's ephemeral range, or 0
// when it cannot be read.
func ephemeralFirst() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	var first, last int
	if _, err := fmt.Sscan(string(b), &first, &last); err != nil {
		return 0
	}
	return first
}
