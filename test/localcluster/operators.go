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

package localcluster

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/flint-io/flint/controllers"
)

// Operators runs the operator as processes of cmd/operator, the way a
// Deployment of that many replicas does: they elect a leader, and one
// that ends is started again a second later. Faults kill and freeze them.
type Operators struct {
	bin  string
	env  []string
	args []string
	dir  string

	mu    sync.Mutex
	procs []*operatorProcess
	// quit ends the supervisors; done counts them out.
	quit chan struct{}
	done sync.WaitGroup
}

// operatorProcess is one replica's current process.
type operatorProcess struct {
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
}

// leaderAcquired is what client-go's leader election logs, in lower
// case, once this process leads.
var leaderAcquired = []byte("successfully acquired lease")

// operatorArgs are the flags of an operator process with o's timings.
func operatorArgs(o controllers.Options) []string {
	args := []string{
		"--namespace=" + o.Namespace, "--osd-image=" + o.OSDImage, "--osd-priority-class=" + o.PriorityClass,
		"--osd-service-account=" + o.ServiceAccount, "--agent-port=" + strconv.Itoa(o.AgentPort),
		"--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--resync=" + o.Resync.String(), "--replica-grace=" + o.ReplicaGrace.String(), "--target-grace=" + o.TargetGrace.String(),
		"--agent-lease=" + o.AgentLease.String(), "--orphan-grace=" + o.OrphanGrace.String(),
		"--osd-network-policy=" + strconv.FormatBool(o.NetworkPolicy),
	}
	if o.VolumeWorkers > 0 {
		args = append(args, "--volume-workers="+strconv.Itoa(o.VolumeWorkers))
	}
	if o.SnapshotWorkers > 0 {
		args = append(args, "--snapshot-workers="+strconv.Itoa(o.SnapshotWorkers))
	}
	if o.FenceProbeTimeout > 0 {
		args = append(args, "--fence-probe-timeout="+o.FenceProbeTimeout.String())
	}
	return args
}

// startOperators builds cmd/operator in dir and runs n supervised
// replicas of it with args against kubeconfig.
func startOperators(root, dir, kubeconfig string, n int, args []string) (*Operators, error) {
	bin := filepath.Join(dir, "operator")
	build := exec.Command("go", "build", "-o", bin, "./cmd/operator")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build the operator: %v\n%s", err, out)
	}
	ops := &Operators{bin: bin, dir: dir, args: args, env: append(os.Environ(), "KUBECONFIG="+kubeconfig), quit: make(chan struct{})}
	ops.procs = make([]*operatorProcess, n)
	for i := range n {
		if err := ops.start(i); err != nil {
			ops.stop()
			return nil, err
		}
		ops.done.Add(1)
		go ops.supervise(i)
	}
	return ops, nil
}

// start runs replica i, logging to a file of its own per start.
func (ops *Operators) start(i int) error {
	log := filepath.Join(ops.dir, fmt.Sprintf("operator-%d-%d.log", i, time.Now().UnixNano()))
	f, err := os.Create(log)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	cmd := exec.Command(ops.bin, ops.args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = ops.env, f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start the operator: %w", err)
	}
	p := &operatorProcess{cmd: cmd, log: log, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	ops.mu.Lock()
	ops.procs[i] = p
	ops.mu.Unlock()
	return nil
}

// supervise starts replica i again a second after each time it ends.
func (ops *Operators) supervise(i int) {
	defer ops.done.Done()
	for {
		ops.mu.Lock()
		p := ops.procs[i]
		ops.mu.Unlock()
		select {
		case <-ops.quit:
			_ = p.cmd.Process.Kill()
			<-p.exited
			return
		case <-p.exited:
		}
		select {
		case <-ops.quit:
			return
		case <-time.After(time.Second):
		}
		if err := ops.start(i); err != nil {
			fmt.Fprintf(os.Stderr, "localcluster: operator %d: %v\n", i, err)
			return
		}
	}
}

// Leader is the replica that leads: the running one whose process
// logged that it acquired the lease; -1 while none has.
func (ops *Operators) Leader() int {
	ops.mu.Lock()
	defer ops.mu.Unlock()
	for i, p := range ops.procs {
		select {
		case <-p.exited:
			continue
		default:
		}
		if data, err := os.ReadFile(p.log); err == nil && bytes.Contains(bytes.ToLower(data), leaderAcquired) {
			return i
		}
	}
	return -1
}

// Signal sends sig to replica i's process: SIGKILL has it started again,
// SIGSTOP freezes it until SIGCONT.
func (ops *Operators) Signal(i int, sig syscall.Signal) error {
	ops.mu.Lock()
	defer ops.mu.Unlock()
	return ops.procs[i].cmd.Process.Signal(sig)
}

// Pid is the process id of replica i's current process.
func (ops *Operators) Pid(i int) int {
	ops.mu.Lock()
	defer ops.mu.Unlock()
	return ops.procs[i].cmd.Process.Pid
}

// stop ends every replica: each supervisor kills its own on quit.
func (ops *Operators) stop() {
	close(ops.quit)
	ops.done.Wait()
}
