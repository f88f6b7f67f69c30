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

// Package nvmeof is the node's kernel NVMe-oF host: it connects
// controllers by writing connect strings to /dev/nvme-fabrics, finds a
// subsystem's block device and paths in sysfs, and deletes paths.
//
// It talks to the kernel directly rather than through nvme-cli: the node
// image needs no nvme-cli/libnvme of a matching version, the kernel's errno
// reaches the caller unchanged, and /dev/nvme-fabrics and sysfs are the
// interfaces nvme-cli itself uses.
package nvmeof

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flint-io/flint/internal/fabric"
)

// Path is one way to a subsystem: a transport address.
type Path struct {
	// Transport is tcp or rdma.
	Transport string
	Address   string
	Port      int32
}

func (p Path) String() string { return fmt.Sprintf("%s %s:%d", p.Transport, p.Address, p.Port) }

// Validate checks p against the grammar of each connect option: what the
// kernel is sent comes from a Volume's status, and a value carrying a ','
// would add options of its own choosing (another hostnqn, traddr...).
func (p Path) Validate() error {
	return fabric.ValidateEndpoint(p.Transport, p.Address, int64(p.Port))
}

// Options are the reconnect settings of every controller the host
// connects; zero values are left to the kernel (nvme-fabrics defaults).
type Options struct {
	// CtrlLossTimeout is how long the kernel reconnects a lost controller
	// before it removes it; negative means forever.
	CtrlLossTimeout time.Duration
	// ReconnectDelay is the wait between reconnect attempts.
	ReconnectDelay time.Duration
	// FastIOFailTimeout fails I/O on a reconnecting path after this long
	// instead of queueing it until CtrlLossTimeout.
	FastIOFailTimeout time.Duration
}

// Host is the kernel NVMe-oF host of this machine.
type Host struct {
	// Sysfs is where sysfs is mounted (/sys).
	Sysfs string
	// Dev is where device nodes live (/dev).
	Dev string
	// HostNQN is this node's host NQN, sent on every connect.
	HostNQN string
	// HostID is this node's host identifier (HostID), sent with HostNQN
	// when set.
	HostID  string
	Options Options
}

// Controller is one connected path of a subsystem.
type Controller struct {
	// Name is the controller's kernel name (nvme3).
	Name string
	Path Path
	// State is the kernel's: live, connecting, resetting, deleting, new, dead.
	State string
}

// Live says whether the controller carries I/O.
func (c Controller) Live() bool { return c.State == "live" }

// Secrets are the DH-HMAC-CHAP secrets a controller authenticates with
// (NVMe in-band authentication): Host, which the host proves, and Ctrl,
// which the host asks the target to prove back when set. Zero Secrets
// authenticate nothing.
type Secrets struct {
	Host, Ctrl string
}

// Validate checks each secret set against the DH-HMAC-CHAP grammar: they
// go into a connect string.
func (s Secrets) Validate() error {
	if s.Host == "" && s.Ctrl != "" {
		return errors.New("a controller secret needs a host secret")
	}
	for _, secret := range []string{s.Host, s.Ctrl} {
		if secret == "" {
			continue
		}
		if err := fabric.ValidateSecret(secret); err != nil {
			return err
		}
	}
	return nil
}

// Connect connects one controller of subsystem nqn on path, proving
// secrets when set; a path already connected is left alone. NQNs, the path
// and the secrets are validated first: nothing outside their grammar
// reaches the kernel.
func (h *Host) Connect(ctx context.Context, nqn string, p Path, secrets Secrets) error {
	for _, err := range []error{fabric.ValidateNQN(nqn), fabric.ValidateNQN(h.HostNQN), p.Validate(), secrets.Validate()} {
		if err != nil {
			return fmt.Errorf("refusing to connect %s over %s: %w", nqn, p, err)
		}
	}
	ctrls, err := h.Controllers(nqn)
	if err != nil {
		return err
	}
	for _, c := range ctrls {
		if c.Path == p && c.State != "deleting" {
			return nil
		}
	}
	opts := []string{
		"nqn=" + nqn, "transport=" + p.Transport, "traddr=" + p.Address,
		"trsvcid=" + strconv.Itoa(int(p.Port)), "hostnqn=" + h.HostNQN,
	}
	if h.HostID != "" {
		if !uuidForm.MatchString(h.HostID) {
			return fmt.Errorf("refusing to connect %s over %s: host ID %q is not a UUID", nqn, p, h.HostID)
		}
		opts = append(opts, "hostid="+h.HostID)
	}
	opts = appendSeconds(opts, "ctrl_loss_tmo", h.Options.CtrlLossTimeout)
	opts = appendSeconds(opts, "reconnect_delay", h.Options.ReconnectDelay)
	opts = appendSeconds(opts, "fast_io_fail_tmo", h.Options.FastIOFailTimeout)
	if secrets.Host != "" {
		opts = append(opts, "dhchap_secret="+secrets.Host)
	}
	if secrets.Ctrl != "" {
		opts = append(opts, "dhchap_ctrl_secret="+secrets.Ctrl)
	}
	f, err := os.OpenFile(filepath.Join(h.Dev, "nvme-fabrics"), os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("open the kernel NVMe-oF host: %w (load nvme-%s: modprobe nvme-%s)", err, p.Transport, p.Transport)
	}
	defer func() { _ = f.Close() }() // the connect is decided by the write
	if err := h.MultipathOn(); err != nil {
		return fmt.Errorf("refusing to connect %s over %s: %w", nqn, p, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := f.WriteString(strings.Join(opts, ","))
		done <- err
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		return fmt.Errorf("connect %s over %s: %w", nqn, p, ctx.Err())
	}
	switch {
	case err == nil, errors.Is(err, syscall.EALREADY):
		return nil
	case errors.Is(err, syscall.EINVAL) && !h.transportLoaded(p.Transport):
		return fmt.Errorf("connect %s over %s: the kernel has no %s transport: modprobe nvme-%s", nqn, p, p.Transport, p.Transport)
	case secrets.Host != "" && (errors.Is(err, syscall.EPROTONOSUPPORT) || errors.Is(err, syscall.EINVAL)) && !h.authLoaded():
		return fmt.Errorf("connect %s over %s: the volume asks hosts to authenticate (DH-HMAC-CHAP) and this node's kernel cannot: it needs CONFIG_NVME_HOST_AUTH (nvme_auth module); %w", nqn, p, err)
	case secrets.Host == "" && errors.Is(err, syscall.ENOKEY):
		return fmt.Errorf("connect %s over %s: the target asks this host to authenticate (DH-HMAC-CHAP) and it has no key for the volume: %w (the volume's StorageClass must name its node-stage secret)", nqn, p, err)
	case secrets.Host != "" && (errors.Is(err, syscall.EKEYREJECTED) || errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM)):
		return fmt.Errorf("connect %s over %s: DH-HMAC-CHAP failed: the target refused this node's key for the volume, or did not prove its own: %w (the keys are the Secret the StorageClass names as node-stage secret)", nqn, p, err)
	case errors.Is(err, syscall.EIO), errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
		// The target answered and refused: unknown subsystem or host not
		// in its allow-list.
		return fmt.Errorf("connect %s over %s: the target refused host %s: %w (is the volume published to this node?)", nqn, p, h.HostNQN, err)
	default:
		return fmt.Errorf("connect %s over %s: %w", nqn, p, err)
	}
}

// MultipathOn checks that the kernel joins a subsystem's paths under one
// namespace head (native NVMe multipath). Without it a target's move
// changes the device under the mount, and the I/O a snapshot's pause
// holds (ANA inaccessible) fails after a few retries instead of waiting.
func (h *Host) MultipathOn() error {
	b, err := os.ReadFile(filepath.Join(h.Sysfs, "module", "nvme_core", "parameters", "multipath"))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return errors.New("this node's kernel has no native NVMe multipath (built without CONFIG_NVME_MULTIPATH); Flint's volumes need it to keep their I/O across a target move and a snapshot")
	case err != nil:
		return fmt.Errorf("read whether native NVMe multipath is on: %w", err)
	case strings.TrimSpace(string(b)) != "Y":
		return errors.New("native NVMe multipath is off on this node (nvme_core.multipath=N); Flint's volumes need it to keep their I/O across a target move and a snapshot: boot with nvme_core.multipath=Y")
	}
	return nil
}

func appendSeconds(opts []string, key string, d time.Duration) []string {
	switch {
	case d == 0:
		return opts
	case d < 0:
		return append(opts, key+"=-1")
	}
	return append(opts, fmt.Sprintf("%s=%d", key, int((d+time.Second-1)/time.Second)))
}

func (h *Host) authLoaded() bool {
	_, err := os.Stat(filepath.Join(h.Sysfs, "module", "nvme_auth"))
	return err == nil
}

// SecretsOf returns the secrets subsystem nqn's controllers authenticate
// with, as the kernel keeps them: a path added later (the target moved)
// connects with them. Zero when no controller has any.
func (h *Host) SecretsOf(nqn string) (Secrets, error) {
	ctrls, err := h.Controllers(nqn)
	if err != nil {
		return Secrets{}, err
	}
	for _, c := range ctrls {
		dir := filepath.Join(h.Sysfs, "class", "nvme", c.Name)
		if s := (Secrets{Host: readAttr(dir, "dhchap_secret"), Ctrl: readAttr(dir, "dhchap_ctrl_secret")}); s.Host != "" && s.Host != "none" {
			if s.Ctrl == "none" {
				s.Ctrl = ""
			}
			return s, nil
		}
	}
	return Secrets{}, nil
}

// SetSecrets gives every controller of subsystem nqn new secrets; the
// kernel re-authenticates each live one with them at once, and uses them
// at every reconnect after. Connected I/O goes on.
func (h *Host) SetSecrets(nqn string, s Secrets) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("refusing to set the secrets of %s: %w", nqn, err)
	}
	ctrls, err := h.Controllers(nqn)
	if err != nil {
		return err
	}
	for _, c := range ctrls {
		dir := filepath.Join(h.Sysfs, "class", "nvme", c.Name)
		for _, a := range []struct{ name, value string }{{"dhchap_secret", s.Host}, {"dhchap_ctrl_secret", s.Ctrl}} {
			if a.value == "" || readAttr(dir, a.name) == a.value {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, a.name), []byte(a.value), 0); err != nil {
				return fmt.Errorf("set %s of controller %s (%s): %w", a.name, c.Name, c.Path, err)
			}
		}
	}
	return nil
}

func (h *Host) transportLoaded(transport string) bool {
	_, err := os.Stat(filepath.Join(h.Sysfs, "module", "nvme_"+transport))
	return err == nil
}

// Controllers lists the controllers (paths) of subsystem nqn.
func (h *Host) Controllers(nqn string) ([]Controller, error) {
	entries, err := os.ReadDir(filepath.Join(h.Sysfs, "class", "nvme"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ctrls []Controller
	for _, e := range entries {
		dir := filepath.Join(h.Sysfs, "class", "nvme", e.Name())
		if readAttr(dir, "subsysnqn") != nqn {
			continue
		}
		c := Controller{Name: e.Name(), State: readAttr(dir, "state"), Path: pathOf(readAttr(dir, "transport"), readAttr(dir, "address"))}
		ctrls = append(ctrls, c)
	}
	slices.SortFunc(ctrls, func(a, b Controller) int { return strings.Compare(a.Name, b.Name) })
	return ctrls, nil
}

// pathOf reads a controller's path from its sysfs transport and address
// ("traddr=10.0.0.5,trsvcid=4420,src_addr=..."). A port that is not one
// (0 or beyond 65535) reads as 0, which no listed path has.
func pathOf(transport, address string) Path {
	p := Path{Transport: transport}
	for _, kv := range strings.Split(address, ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "traddr":
			p.Address = v
		case "trsvcid":
			if port, err := strconv.ParseUint(v, 10, 16); err == nil {
				p.Port = int32(port)
			}
		}
	}
	return p
}

// Delete removes one controller (path).
func (h *Host) Delete(c Controller) error {
	err := os.WriteFile(filepath.Join(h.Sysfs, "class", "nvme", c.Name, "delete_controller"), []byte("1"), 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete controller %s (%s): %w", c.Name, c.Path, err)
	}
	return nil
}

// Disconnect removes every controller of subsystem nqn.
func (h *Host) Disconnect(nqn string) error {
	ctrls, err := h.Controllers(nqn)
	if err != nil {
		return err
	}
	for _, c := range ctrls {
		if err := h.Delete(c); err != nil {
			return err
		}
	}
	return nil
}

// Rescan asks every live controller of nqn to re-read its namespaces (a
// grown namespace's new size).
func (h *Host) Rescan(nqn string) error {
	ctrls, err := h.Controllers(nqn)
	if err != nil {
		return err
	}
	for _, c := range ctrls {
		if !c.Live() {
			continue
		}
		if err := os.WriteFile(filepath.Join(h.Sysfs, "class", "nvme", c.Name, "rescan_controller"), []byte("1"), 0); err != nil {
			return fmt.Errorf("rescan controller %s: %w", c.Name, err)
		}
	}
	return nil
}

var (
	namespaceName = regexp.MustCompile(`^nvme[0-9]+(c[0-9]+)?n[0-9]+$`)
	// pathNamespaceName is a namespace as one controller sees it under
	// native multipath: nvme<subsystem>c<controller>n<head>.
	pathNamespaceName = regexp.MustCompile(`^nvme([0-9]+)c[0-9]+n([0-9]+)$`)
)

// Carries says whether controller c is a path of the namespace head
// device (/dev/nvmeSnH): the kernel has scanned the namespace on c and
// joined it to that head. It does so only when the namespace's
// identifiers (UUID, NGUID, EUI-64) match the head's, and only after the
// controller went live: the scan runs asynchronously after the connect
// returns. Until then I/O cannot fail over to c.
func (h *Host) Carries(c Controller, device string) bool {
	entries, err := os.ReadDir(filepath.Join(h.Sysfs, "class", "nvme", c.Name))
	if err != nil {
		return false
	}
	head := filepath.Base(device)
	for _, e := range entries {
		if m := pathNamespaceName.FindStringSubmatch(e.Name()); m != nil && "nvme"+m[1]+"n"+m[2] == head {
			return true
		}
	}
	return false
}

// ErrNoDevice means the subsystem has no block device (yet).
var ErrNoDevice = errors.New("no block device")

// Device returns the block device of subsystem nqn's first namespace: the
// multipath head (/dev/nvmeXnY) when native multipath is on, else the
// namespace of its first controller.
func (h *Host) Device(nqn string) (string, error) {
	subsystems, err := filepath.Glob(filepath.Join(h.Sysfs, "class", "nvme-subsystem", "*"))
	if err != nil {
		return "", err
	}
	for _, dir := range subsystems {
		if readAttr(dir, "subsysnqn") != nqn {
			continue
		}
		if name := firstNamespace(dir, false); name != "" {
			return filepath.Join(h.Dev, name), nil
		}
	}
	ctrls, err := h.Controllers(nqn)
	if err != nil {
		return "", err
	}
	for _, c := range ctrls {
		if name := firstNamespace(filepath.Join(h.Sysfs, "class", "nvme", c.Name), true); name != "" {
			return filepath.Join(h.Dev, name), nil
		}
	}
	return "", fmt.Errorf("subsystem %s: %w", nqn, ErrNoDevice)
}

// firstNamespace is the first namespace block device under dir; hidden
// per-path devices (nvmeXcYnZ) count only when perPath.
func firstNamespace(dir string, perPath bool) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var names []string
	for _, e := range entries {
		m := namespaceName.FindStringSubmatch(e.Name())
		if m == nil || (m[1] != "" && !perPath) {
			continue
		}
		names = append(names, e.Name())
	}
	slices.Sort(names)
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

// WaitDevice waits for subsystem nqn's block device to appear.
func (h *Host) WaitDevice(ctx context.Context, nqn string) (string, error) {
	for {
		dev, err := h.Device(nqn)
		if err == nil {
			if _, err = os.Stat(dev); err == nil {
				return dev, nil
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("wait for the block device of %s: %w (last: %v)", nqn, ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func readAttr(dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
