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

package csi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
	"github.com/flint-io/flint/csi/nvmeof"
)

// AnnotationCSIName holds the name CreateVolume was called with (the PV
// name), which the Volume's name is derived from.
const AnnotationCSIName = "flint.io/csi-name"

const (
	mib = int64(1) << 20
	// defaultSize is a volume's size when CreateVolume asks for none.
	defaultSize = int64(1) << 30
	// MaxVolumeBytes is the largest volume Flint makes (1 PiB): every
	// size computed from a request stays far from int64's limit, so no
	// rounding overflows into a small volume.
	MaxVolumeBytes = int64(1) << 50
	// listToken prefixes ListVolumes' continuation tokens: the last name
	// returned, so a token stays valid when volumes come and go.
	listToken = "after:"
)

// Controller is the CSI controller service. It keeps no state of its own:
// every call reads and writes Volumes and Pools through the Kubernetes
// API, and waits for the operator to act on them.
type Controller struct {
	csi.UnimplementedControllerServer
	// Client writes; its reads may come from a cache.
	Client client.Client
	// APIReader reads the apiserver directly (a name just created).
	APIReader client.Reader
	// Events wakes waits when a Volume changes; without it they poll.
	Events *VolumeEvents
	// PollInterval is how often a wait reads a Volume again when no event
	// woke it.
	PollInterval time.Duration
	// MaxWait bounds a call's wait when its context has no deadline.
	MaxWait time.Duration
	locks   volumeLocks
}

// ControllerGetCapabilities lists what the controller serves.
func (c *Controller) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	var caps []*csi.ControllerServiceCapability
	for _, t := range []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME,
		csi.ControllerServiceCapability_RPC_LIST_VOLUMES,
		csi.ControllerServiceCapability_RPC_LIST_VOLUMES_PUBLISHED_NODES,
		csi.ControllerServiceCapability_RPC_GET_VOLUME,
		csi.ControllerServiceCapability_RPC_GET_VOLUME_HEALTH,
		csi.ControllerServiceCapability_RPC_LIST_VOLUME_HEALTH,
		csi.ControllerServiceCapability_RPC_GET_CAPACITY,
		csi.ControllerServiceCapability_RPC_EXPAND_VOLUME,
		csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
		csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS,
		csi.ControllerServiceCapability_RPC_GET_SNAPSHOT,
		csi.ControllerServiceCapability_RPC_CLONE_VOLUME,
		csi.ControllerServiceCapability_RPC_MODIFY_VOLUME,
	} {
		caps = append(caps, &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{Rpc: &csi.ControllerServiceCapability_RPC{Type: t}}})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

// VolumeID is the Volume (and CSI volume id) for a CreateVolume name: the
// name itself when it is a DNS label (PV names are), else a digest of it.
func VolumeID(name string) string {
	if len(validation.IsDNS1123Label(name)) == 0 {
		return name
	}
	sum := sha256.Sum256([]byte(name))
	return "csi-" + hex.EncodeToString(sum[:20])
}

// CreateVolume writes a Volume and waits until it serves I/O.
func (c *Controller) CreateVolume(ctx context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if err := requireField(req.GetName(), "name"); err != nil {
		return nil, err
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return nil, err
	}
	params, err := parseParameters(req.GetParameters())
	if err != nil {
		return nil, err
	}
	if err := applyMutableParameters(&params.qos, req.GetMutableParameters()); err != nil {
		return nil, err
	}
	src, least, err := c.volumeSource(ctx, req.GetVolumeContentSource())
	if err != nil {
		return nil, err
	}
	size, err := sizeFor(req.GetCapacityRange(), least)
	if err != nil {
		return nil, err
	}
	id := VolumeID(req.GetName())
	unlock, err := c.locks.lock(id)
	if err != nil {
		return nil, err
	}
	defer unlock()

	if err := c.APIReader.Get(ctx, client.ObjectKey{Name: params.pool}, &flintv1.Pool{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, status.Errorf(codes.InvalidArgument, "StorageClass parameter pool=%q: no such Pool: create it or name an existing one (kubectl get pools)", params.pool)
		}
		return nil, apiError(err)
	}
	accessible, err := accessibleTopology(ctx, c.APIReader, params.claim)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "read the StorageClass of claim %s/%s for its allowedTopologies: %v", params.claim.Namespace, params.claim.Name, err)
	}
	if err := c.ensureVolume(ctx, id, req, params, size, src); err != nil {
		return nil, err
	}
	vol, err := c.waitUntil(ctx, id, "Ready", servesIO)
	if err != nil {
		return nil, c.notReady(ctx, vol, err)
	}
	v := csiVolume(vol, params.fsType)
	v.ContentSource = contentSource(vol.Spec.Source)
	v.AccessibleTopology = accessible
	return &csi.CreateVolumeResponse{Volume: v}, nil
}

// ensureVolume creates the Volume, or checks that the one there was made
// by the same request.
func (c *Controller) ensureVolume(ctx context.Context, id string, req *csi.CreateVolumeRequest, p parameters, size int64, src *flintv1.VolumeSource) error {
	vol := &flintv1.Volume{
		ObjectMeta: metav1.ObjectMeta{
			Name: id, Annotations: map[string]string{AnnotationCSIName: req.GetName()},
			Finalizers: []string{flintv1.VolumeFinalizer},
		},
		Spec: flintv1.VolumeSpec{Pool: p.pool, Size: *resource.NewQuantity(size, resource.BinarySI), Replicas: p.replicas, Source: src, Claim: p.claim, RebuildMaxBandwidthMiBps: p.rebuildCap, QoS: p.qos.OrNone(),
			NearNode: nearNode(req.GetAccessibilityRequirements()), HostAuthentication: p.hostAuthentication},
	}
	err := c.Client.Create(ctx, vol)
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return apiError(err)
	}
	if err := c.APIReader.Get(ctx, client.ObjectKey{Name: id}, vol); err != nil {
		return apiError(err)
	}
	have := vol.Spec.Size.Value()
	r := req.GetCapacityRange()
	switch {
	case vol.Annotations[AnnotationCSIName] != req.GetName():
		return status.Errorf(codes.AlreadyExists, "Volume %s exists for another name (%q)", id, vol.Annotations[AnnotationCSIName])
	case vol.Spec.Pool != p.pool:
		return status.Errorf(codes.AlreadyExists, "volume %s exists in Pool %s, not %s", req.GetName(), vol.Spec.Pool, p.pool)
	case have < r.GetRequiredBytes() || (r.GetLimitBytes() > 0 && have > r.GetLimitBytes()):
		return status.Errorf(codes.AlreadyExists, "volume %s exists with %d bytes, outside the requested range %d-%d", req.GetName(), have, r.GetRequiredBytes(), r.GetLimitBytes())
	case p.replicas != nil && (vol.Spec.Replicas == nil || *vol.Spec.Replicas != *p.replicas):
		return status.Errorf(codes.AlreadyExists, "volume %s exists with other replicas", req.GetName())
	case !equality.Semantic.DeepEqual(vol.Spec.Source, src):
		return status.Errorf(codes.AlreadyExists, "volume %s exists with another content source", req.GetName())
	case vol.AuthenticatesHosts() != (p.hostAuthentication == flintv1.HostAuthenticationDHHMACCHAP):
		return status.Errorf(codes.AlreadyExists, "volume %s exists with hostAuthentication %q", req.GetName(), vol.Spec.HostAuthentication)
	case !vol.DeletionTimestamp.IsZero():
		return status.Errorf(codes.Aborted, "volume %s is being deleted: retry when it is gone", req.GetName())
	}
	// The limits are mutable: a retry may come with the claim's class
	// changed, and the provisioner then records that class as current.
	if want := p.qos.OrNone(); !equality.Semantic.DeepEqual(vol.Spec.QoS, want) {
		vol.Spec.QoS = want
		if err := c.Client.Update(ctx, vol); err != nil {
			if apierrors.IsConflict(err) {
				return status.Errorf(codes.Aborted, "volume %s changed while its limits were set: retry", req.GetName())
			}
			return apiError(err)
		}
	}
	return nil
}

// notReady turns a Volume that did not become Ready into the error a CO
// retries. A Volume with no placement holds nothing and is deleted, so
// a retry starts afresh and a PVC deleted meanwhile leaves nothing behind.
func (c *Controller) notReady(ctx context.Context, vol *flintv1.Volume, err error) error {
	if vol == nil || status.Code(err) != codes.DeadlineExceeded {
		return err
	}
	why := "not Ready yet"
	if cond := meta.FindStatusCondition(vol.Status.Conditions, flintv1.ReadyCondition); cond != nil {
		why = fmt.Sprintf("%s: %s", cond.Reason, cond.Message)
	}
	if vol.Status.Phase == flintv1.VolumePhasePending && len(vol.Status.Replicas) == 0 {
		if err := c.Client.Delete(ctx, vol); err != nil && !apierrors.IsNotFound(err) {
			return apiError(err)
		}
		return status.Errorf(codes.ResourceExhausted, "Pool %s cannot place volume %s (%s)", vol.Spec.Pool, vol.Name, why)
	}
	return status.Errorf(codes.DeadlineExceeded, "volume %s is %s (%s): the call is retried", vol.Name, vol.Status.Phase, why)
}

// sizeFor is the size of a new volume for r: whole MiB, at least 1 MiB;
// with a content source of least bytes, its size by default and never
// less (a smaller range is OutOfRange, as the CSI spec's example says).
func sizeFor(r *csi.CapacityRange, least int64) (int64, error) {
	required, limit := r.GetRequiredBytes(), r.GetLimitBytes()
	if required < 0 || limit < 0 {
		return 0, status.Error(codes.InvalidArgument, "capacity range: required_bytes and limit_bytes cannot be negative")
	}
	if limit > 0 && required > limit {
		return 0, status.Errorf(codes.InvalidArgument, "capacity range: required_bytes %d is above limit_bytes %d", required, limit)
	}
	if required > MaxVolumeBytes {
		return 0, status.Errorf(codes.OutOfRange, "capacity range: required_bytes %d is above the largest volume, %d bytes (1Pi)", required, MaxVolumeBytes)
	}
	if (limit > 0 && least > limit) || (required > 0 && required < least) {
		return 0, status.Errorf(codes.OutOfRange, "capacity range %d-%d: the content source holds %d bytes; ask for at least that", required, limit, least)
	}
	size := required
	if size == 0 {
		size = defaultSize
		if least > 0 {
			size = least
		}
		if limit > 0 && limit < size {
			size = limit
		}
	}
	size = max(size, least)
	size = max((size+mib-1)/mib*mib, mib)
	if limit > 0 && size > limit {
		return 0, status.Errorf(codes.OutOfRange, "capacity range: volumes are whole MiB of at least 1MiB; %d bytes rounds to %d, above limit_bytes %d", required, size, limit)
	}
	return size, nil
}

// servesIO: the target exports the Volume for the spec's current
// generation (sizes and allowed hosts applied).
func servesIO(vol *flintv1.Volume) bool {
	ready := meta.FindStatusCondition(vol.Status.Conditions, flintv1.ReadyCondition)
	return ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration >= vol.Generation &&
		vol.Status.Target != nil && len(vol.Status.Target.Endpoints) > 0
}

// waitUntil waits until Volume id is done; it gives up (DeadlineExceeded,
// with the Volume last seen) a little before ctx's deadline so the caller
// gets a reason rather than a cancelled call.
func (c *Controller) waitUntil(ctx context.Context, id, what string, done func(*flintv1.Volume) bool) (*flintv1.Volume, error) {
	wait := c.MaxWait
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d) * 9 / 10
	}
	var last *flintv1.Volume
	err := c.await(ctx, id, time.Now().Add(wait), func(vol *flintv1.Volume) (bool, error) {
		if vol == nil {
			return false, status.Errorf(codes.NotFound, "volume %s disappeared while waiting for it to be %s", id, what)
		}
		last = vol
		return done(vol), nil
	})
	if errors.Is(err, errWaitedEnough) {
		return last, status.Errorf(codes.DeadlineExceeded, "volume %s is not %s yet", id, what)
	}
	return last, err
}

// read returns Volume id from the cache, or nil when it is gone. The
// cache lags the apiserver, so a Volume missing from it (one just created,
// or re-created under its name) is looked up in the apiserver.
func (c *Controller) read(ctx context.Context, id string) (*flintv1.Volume, error) {
	vol := &flintv1.Volume{}
	err := c.Client.Get(ctx, client.ObjectKey{Name: id}, vol)
	if apierrors.IsNotFound(err) {
		err = c.APIReader.Get(ctx, client.ObjectKey{Name: id}, vol)
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
	}
	if err != nil {
		return nil, apiError(err)
	}
	return vol, nil
}

// errWaitedEnough ends an await whose deadline passed.
var errWaitedEnough = errors.New("waited enough")

// await reads Volume id (nil once it is gone) and hands it
// to look until look is done or fails, or until deadline (errWaitedEnough)
// or ctx ends. It reads again when the Volume's informer sees it change
// (Events), and every PollInterval regardless.
func (c *Controller) await(ctx context.Context, id string, deadline time.Time, look func(*flintv1.Volume) (bool, error)) error {
	var changed <-chan struct{}
	if c.Events != nil {
		ch, stop := c.Events.watch(id)
		defer stop()
		changed = ch
	}
	for {
		vol, err := c.read(ctx, id)
		if err != nil {
			return err
		}
		if done, err := look(vol); done || err != nil {
			return err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return errWaitedEnough
		}
		select {
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		case <-changed:
		case <-time.After(min(c.PollInterval, left)):
		}
	}
}

func csiVolume(vol *flintv1.Volume, fsType string) *csi.Volume {
	vc := map[string]string{ContextPool: vol.Spec.Pool}
	if fsType != "" {
		vc[ContextFsType] = fsType
	}
	if vol.AuthenticatesHosts() {
		vc[ContextHostAuthentication] = string(vol.Spec.HostAuthentication)
	}
	return &csi.Volume{VolumeId: vol.Name, CapacityBytes: vol.Spec.Size.Value(), VolumeContext: vc}
}

// DeleteVolume deletes a Volume that is published nowhere and waits until
// the operator has removed its target and replicas.
func (c *Controller) DeleteVolume(ctx context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := requireField(id, "volume id"); err != nil {
		return nil, err
	}
	unlock, err := c.locks.lock(id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	vol := &flintv1.Volume{}
	if err := c.APIReader.Get(ctx, client.ObjectKey{Name: id}, vol); err != nil {
		if apierrors.IsNotFound(err) {
			return &csi.DeleteVolumeResponse{}, nil
		}
		return nil, apiError(err)
	}
	if len(vol.Spec.PublishedHosts) > 0 {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is still published to %s: unpublish it (detach it from its node) first", id, strings.Join(vol.Spec.PublishedHosts, ", "))
	}
	if err := c.Client.Delete(ctx, vol, client.Preconditions{UID: &vol.UID}); err != nil && !apierrors.IsNotFound(err) {
		return nil, apiError(err)
	}
	deadline := time.Now().Add(c.MaxWait)
	if d, ok := ctx.Deadline(); ok {
		deadline = d
	}
	err = c.await(ctx, id, deadline, func(vol *flintv1.Volume) (bool, error) {
		if vol == nil {
			return true, nil
		}
		if blocked := meta.FindStatusCondition(vol.Status.Conditions, flintv1.DeletionBlockedCondition); blocked != nil && blocked.Status == metav1.ConditionTrue {
			return false, status.Errorf(codes.FailedPrecondition, "deleting volume %s is blocked: %s", id, blocked.Message)
		}
		return false, nil
	})
	switch {
	case err == nil:
		return &csi.DeleteVolumeResponse{}, nil
	case errors.Is(err, errWaitedEnough), status.Code(err) == codes.DeadlineExceeded, status.Code(err) == codes.Canceled:
		return nil, status.Errorf(codes.DeadlineExceeded, "volume %s is still being deleted: the call is retried", id)
	}
	return nil, err
}

// ControllerPublishVolume allows node's host NQN on the Volume's subsystem
// and returns where to connect.
func (c *Controller) ControllerPublishVolume(ctx context.Context, req *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	id, host := req.GetVolumeId(), req.GetNodeId()
	if err := requireField(id, "volume id"); err != nil {
		return nil, err
	}
	if err := requireField(host, "node id"); err != nil {
		return nil, err
	}
	if err := checkCapability(req.GetVolumeCapability()); err != nil {
		return nil, err
	}
	unlock, err := c.locks.lock(id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if !nvmeof.ValidNQN(host) {
		return nil, status.Errorf(codes.NotFound, "node %q is not a Flint node: node ids are the host NQNs the node plugin reports (NodeGetInfo)", host)
	}
	node, err := c.nodeOfHost(ctx, host)
	if err != nil {
		return nil, err
	}
	err = c.updateSpec(ctx, id, func(spec *flintv1.VolumeSpec) error {
		if slices.Contains(spec.PublishedHosts, host) {
			return nil
		}
		if len(spec.PublishedHosts) > 0 {
			return status.Errorf(codes.FailedPrecondition, "volume %s is published to %s: a Flint volume attaches to one node at a time; detach it there first", id, strings.Join(spec.PublishedHosts, ", "))
		}
		spec.PublishedHosts = append(spec.PublishedHosts, host)
		// The Volume is used on node now: its target follows, while no
		// host is connected to be held up by the move.
		if node != "" {
			spec.NearNode = node
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	vol, err := c.waitUntil(ctx, id, "exported to "+host, func(v *flintv1.Volume) bool { return servesIO(v) && allows(v, host) })
	if err != nil {
		return nil, err
	}
	return &csi.ControllerPublishVolumeResponse{PublishContext: publishContext(vol.Status.Target)}, nil
}

// nodeOfHost is the node whose node plugin reports host as its node id;
// "" when none does yet. It refuses a host NQN that the node plugins of
// more than one node report (nodes cloned from one image with its
// /etc/nvme/hostnqn): a target admits hosts by NQN, so it would let the
// other node in too, and a node's kernel that still reconnects after a
// force-detach would write to the volume beside the node it was
// published to.
func (c *Controller) nodeOfHost(ctx context.Context, host string) (string, error) {
	var nodes storagev1.CSINodeList
	if err := c.APIReader.List(ctx, &nodes); err != nil {
		return "", status.Errorf(codes.Unavailable, "list CSINodes to check that host NQN %s is one node's: %v", host, err)
	}
	var claim []string
	for _, n := range nodes.Items {
		for _, d := range n.Spec.Drivers {
			if d.Name == DriverName && d.NodeID == host {
				claim = append(claim, n.Name)
			}
		}
	}
	switch len(claim) {
	case 0:
		return "", nil
	case 1:
		return claim[0], nil
	}
	return "", status.Errorf(codes.FailedPrecondition, "host NQN %s is the node id of nodes %s, whose /etc/nvme/hostnqn is one file cloned: a target admits hosts by NQN, so it would admit all of them; give each node its own (nvme gen-hostnqn > /etc/nvme/hostnqn, or delete the file and the node plugin writes one), restart its node plugin, then retry", host, strings.Join(claim, ", "))
}

// ControllerUnpublishVolume removes node's host NQN and waits until the
// target no longer lets it in.
func (c *Controller) ControllerUnpublishVolume(ctx context.Context, req *csi.ControllerUnpublishVolumeRequest) (*csi.ControllerUnpublishVolumeResponse, error) {
	id, host := req.GetVolumeId(), req.GetNodeId()
	if err := requireField(id, "volume id"); err != nil {
		return nil, err
	}
	unlock, err := c.locks.lock(id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	err = c.updateSpec(ctx, id, func(spec *flintv1.VolumeSpec) error {
		if host == "" {
			spec.PublishedHosts = nil
		} else {
			spec.PublishedHosts = slices.DeleteFunc(spec.PublishedHosts, func(h string) bool { return h == host })
		}
		return nil
	})
	if status.Code(err) == codes.NotFound {
		return &csi.ControllerUnpublishVolumeResponse{}, nil
	}
	if err != nil {
		return nil, err
	}
	if _, err := c.waitUntil(ctx, id, "unexported from "+host, func(v *flintv1.Volume) bool { return !allows(v, host) }); err != nil && status.Code(err) != codes.NotFound {
		return nil, err
	}
	return &csi.ControllerUnpublishVolumeResponse{}, nil
}

// applied: the operator has acted on the Volume's current spec.
// allows says whether the Volume's target (or a planned move's standby),
// as its agent last read it back from SPDK, lets host connect: unpublishing waits until it no longer
// does, so "unpublished" means "this node cannot connect any more".
// An empty host stands for any host.
func allows(vol *flintv1.Volume, host string) bool {
	t := vol.Status.Target
	if t == nil {
		return false
	}
	allowed := t.AllowedHosts
	if t.Standby != nil {
		// A planned move's standby lets the hosts in before the move.
		allowed = append(slices.Clone(allowed), t.Standby.AllowedHosts...)
	}
	return slices.Contains(allowed, host) || host == "" && len(allowed) > 0
}

// updateSpec rewrites the Volume's spec with change, retrying on
// conflicts; it writes nothing when change changes nothing. A Volume
// being deleted takes no new host.
func (c *Controller) updateSpec(ctx context.Context, id string, change func(*flintv1.VolumeSpec) error) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		vol, err := getVolume(ctx, c.APIReader, id)
		if err != nil {
			return err
		}
		spec := vol.Spec.DeepCopy()
		if err := change(spec); err != nil || equality.Semantic.DeepEqual(*spec, vol.Spec) {
			return err
		}
		if !vol.DeletionTimestamp.IsZero() && len(spec.PublishedHosts) > len(vol.Spec.PublishedHosts) {
			return status.Errorf(codes.NotFound, "volume %s is being deleted", id)
		}
		vol.Spec = *spec
		if err := c.Client.Update(ctx, vol); err != nil {
			if apierrors.IsConflict(err) {
				return err
			}
			return apiError(err)
		}
		return nil
	})
}

// ControllerExpandVolume grows the Volume online and waits until its
// target exports the new size.
func (c *Controller) ControllerExpandVolume(ctx context.Context, req *csi.ControllerExpandVolumeRequest) (*csi.ControllerExpandVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := requireField(id, "volume id"); err != nil {
		return nil, err
	}
	if req.GetCapacityRange() == nil {
		return nil, status.Error(codes.InvalidArgument, "capacity range missing: say the size to grow to")
	}
	if req.GetVolumeCapability() != nil {
		if err := checkCapability(req.GetVolumeCapability()); err != nil {
			return nil, err
		}
	}
	size, err := sizeFor(req.GetCapacityRange(), 0)
	if err != nil {
		return nil, err
	}
	unlock, err := c.locks.lock(id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		vol, err := getVolume(ctx, c.APIReader, id)
		if err != nil {
			return err
		}
		if vol.Spec.Size.Value() >= size {
			return nil
		}
		vol.Spec.Size = *resource.NewQuantity(size, resource.BinarySI)
		err = c.Client.Update(ctx, vol)
		if err != nil && !apierrors.IsConflict(err) {
			return apiError(err)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	vol, err := c.waitUntil(ctx, id, fmt.Sprintf("%d bytes", size), func(v *flintv1.Volume) bool {
		return servesIO(v) && v.Status.Capacity != nil && v.Status.Capacity.Value() >= size
	})
	if err != nil {
		return nil, err
	}
	return &csi.ControllerExpandVolumeResponse{CapacityBytes: vol.Status.Capacity.Value(), NodeExpansionRequired: !isBlock(req.GetVolumeCapability())}, nil
}

// ControllerModifyVolume sets the limits a VolumeAttributesClass names on
// the Volume, and waits until its target enforces them. A Volume without a
// target returns at once: a target is limited before it serves.
func (c *Controller) ControllerModifyVolume(ctx context.Context, req *csi.ControllerModifyVolumeRequest) (*csi.ControllerModifyVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := requireField(id, "volume id"); err != nil {
		return nil, err
	}
	if err := applyMutableParameters(&flintv1.VolumeQoS{}, req.GetMutableParameters()); err != nil {
		return nil, err
	}
	unlock, err := c.locks.lock(id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var want *flintv1.VolumeQoS
	err = c.updateSpec(ctx, id, func(spec *flintv1.VolumeSpec) error {
		q := ptr.Deref(spec.QoS, flintv1.VolumeQoS{})
		if err := applyMutableParameters(&q, req.GetMutableParameters()); err != nil {
			return err
		}
		want = q.OrNone()
		spec.QoS = want
		return nil
	})
	if err != nil {
		return nil, err
	}
	_, err = c.waitUntil(ctx, id, "limited as its VolumeAttributesClass says", func(v *flintv1.Volume) bool {
		return v.Status.Target == nil || len(v.Status.Target.Endpoints) == 0 || equality.Semantic.DeepEqual(v.Status.Target.QoS, want)
	})
	if err != nil {
		return nil, err
	}
	return &csi.ControllerModifyVolumeResponse{}, nil
}

// ValidateVolumeCapabilities confirms the capabilities Flint serves.
func (c *Controller) ValidateVolumeCapabilities(ctx context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if err := requireField(req.GetVolumeId(), "volume id"); err != nil {
		return nil, err
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "volume capabilities missing")
	}
	if _, err := getVolume(ctx, c.Client, req.GetVolumeId()); err != nil {
		return nil, err
	}
	if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: status.Convert(err).Message()}, nil
	}
	if _, err := parseParameters(req.GetParameters()); err != nil && len(req.GetParameters()) > 0 {
		return &csi.ValidateVolumeCapabilitiesResponse{Message: status.Convert(err).Message()}, nil
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext: req.GetVolumeContext(), VolumeCapabilities: req.GetVolumeCapabilities(), Parameters: req.GetParameters(),
	}}, nil
}

// getVolume reads Volume id through r; a missing one is NotFound.
func getVolume(ctx context.Context, r client.Reader, id string) (*flintv1.Volume, error) {
	vol := &flintv1.Volume{}
	if err := r.Get(ctx, client.ObjectKey{Name: id}, vol); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, status.Errorf(codes.NotFound, "volume %s does not exist", id)
		}
		return nil, apiError(err)
	}
	return vol, nil
}

// ControllerGetVolume reports a Volume's nodes and health.
func (c *Controller) ControllerGetVolume(ctx context.Context, req *csi.ControllerGetVolumeRequest) (*csi.ControllerGetVolumeResponse, error) {
	if err := requireField(req.GetVolumeId(), "volume id"); err != nil {
		return nil, err
	}
	vol, err := getVolume(ctx, c.Client, req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	return &csi.ControllerGetVolumeResponse{Volume: csiVolume(vol, ""), Status: &csi.ControllerGetVolumeResponse_VolumeStatus{
		PublishedNodeIds: vol.Spec.PublishedHosts,
	}}, nil
}

// ControllerGetVolumeHealth reports what is wrong with a Volume.
func (c *Controller) ControllerGetVolumeHealth(ctx context.Context, req *csi.ControllerGetVolumeHealthRequest) (*csi.ControllerGetVolumeHealthResponse, error) {
	if err := requireField(req.GetVolumeId(), "volume id"); err != nil {
		return nil, err
	}
	vol, err := getVolume(ctx, c.Client, req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	return &csi.ControllerGetVolumeHealthResponse{VolumeHealth: volumeHealth(vol)}, nil
}

// ControllerListVolumeHealth pages through every Volume's health.
func (c *Controller) ControllerListVolumeHealth(ctx context.Context, req *csi.ControllerListVolumeHealthRequest) (*csi.ControllerListVolumeHealthResponse, error) {
	page, next, err := c.listPage(ctx, req.GetMaxEntries(), req.GetStartingToken())
	if err != nil {
		return nil, err
	}
	resp := &csi.ControllerListVolumeHealthResponse{NextToken: next}
	for i := range page {
		resp.Entries = append(resp.Entries, volumeHealth(&page[i]))
	}
	return resp, nil
}

// volumeHealth is INACCESSIBLE when the Volume does not serve I/O and
// DEGRADED when it runs with fewer in-sync replicas than asked for.
func volumeHealth(vol *flintv1.Volume) *csi.VolumeHealth {
	h := &csi.VolumeHealth{VolumeId: vol.Name}
	ready := meta.FindStatusCondition(vol.Status.Conditions, flintv1.ReadyCondition)
	switch {
	case ready == nil:
		h.HealthStatuses = append(h.HealthStatuses, inaccessible("NoStatus", fmt.Sprintf("the operator has not reported on volume %s yet", vol.Name)))
	case ready.Status != metav1.ConditionTrue:
		h.HealthStatuses = append(h.HealthStatuses, inaccessible(ready.Reason, ready.Message))
	}
	if d := meta.FindStatusCondition(vol.Status.Conditions, flintv1.DegradedCondition); d != nil && d.Status == metav1.ConditionTrue {
		h.HealthStatuses = append(h.HealthStatuses, &csi.VolumeHealth_VolumeHealthEntry{Status: csi.VolumeHealthErrorType_DEGRADED, Reason: d.Reason, Message: d.Message})
	}
	return h
}

// ListVolumes pages through Volumes by name.
func (c *Controller) ListVolumes(ctx context.Context, req *csi.ListVolumesRequest) (*csi.ListVolumesResponse, error) {
	page, next, err := c.listPage(ctx, req.GetMaxEntries(), req.GetStartingToken())
	if err != nil {
		return nil, err
	}
	resp := &csi.ListVolumesResponse{NextToken: next}
	for i := range page {
		vol := &page[i]
		resp.Entries = append(resp.Entries, &csi.ListVolumesResponse_Entry{
			Volume: csiVolume(vol, ""), Status: &csi.ListVolumesResponse_VolumeStatus{PublishedNodeIds: vol.Spec.PublishedHosts},
		})
	}
	return resp, nil
}

// listPage returns up to max Volumes (all when 0) named after token's,
// in name order, and the token of the next page.
func (c *Controller) listPage(ctx context.Context, maxEntries int32, token string) ([]flintv1.Volume, string, error) {
	var list flintv1.VolumeList
	if err := c.Client.List(ctx, &list); err != nil {
		return nil, "", apiError(err)
	}
	return page(list.Items, maxEntries, token)
}

// page returns up to max of objs (all when 0) named after token's, in
// name order, and the token of the next page. A token names the last
// object returned, so it stays valid when objects come and go.
func page[T any, P interface {
	*T
	GetName() string
}](objs []T, maxEntries int32, token string) ([]T, string, error) {
	if maxEntries < 0 {
		return nil, "", status.Error(codes.InvalidArgument, "max_entries cannot be negative")
	}
	after, ok := strings.CutPrefix(token, listToken)
	if token != "" && !ok {
		return nil, "", status.Errorf(codes.Aborted, "starting_token %q was not returned by this driver: list again without it", token)
	}
	name := func(o *T) string { return P(o).GetName() }
	objs = slices.DeleteFunc(objs, func(o T) bool { return name(&o) <= after })
	slices.SortFunc(objs, func(a, b T) int { return strings.Compare(name(&a), name(&b)) })
	if maxEntries == 0 || len(objs) <= int(maxEntries) {
		return objs, "", nil
	}
	objs = objs[:maxEntries]
	return objs, listToken + name(&objs[len(objs)-1]), nil
}

// GetCapacity is what a Pool (parameter pool), or all Pools, can still
// place: usable minus allocated.
func (c *Controller) GetCapacity(ctx context.Context, req *csi.GetCapacityRequest) (*csi.GetCapacityResponse, error) {
	if len(req.GetVolumeCapabilities()) > 0 {
		if err := checkCapabilities(req.GetVolumeCapabilities()); err != nil {
			return &csi.GetCapacityResponse{}, nil
		}
	}
	var pools []flintv1.Pool
	if name := req.GetParameters()[ParamPool]; name != "" {
		var p flintv1.Pool
		if err := c.Client.Get(ctx, client.ObjectKey{Name: name}, &p); err != nil {
			if apierrors.IsNotFound(err) {
				return &csi.GetCapacityResponse{}, nil
			}
			return nil, apiError(err)
		}
		pools = append(pools, p)
	} else {
		var list flintv1.PoolList
		if err := c.Client.List(ctx, &list); err != nil {
			return nil, apiError(err)
		}
		pools = list.Items
	}
	var free int64
	for _, p := range pools {
		if p.Status.Capacity != nil {
			free += max(p.Status.Capacity.Usable.Value()-p.Status.Capacity.Allocated.Value(), 0)
		}
	}
	return &csi.GetCapacityResponse{AvailableCapacity: free}, nil
}

// apiError is an apiserver error as a CSI status: the CO retries
// Unavailable.
func apiError(err error) error {
	if _, ok := status.FromError(err); ok && !errors.As(err, new(apierrors.APIStatus)) {
		return err
	}
	switch {
	case apierrors.IsInvalid(err):
		return status.Errorf(codes.InvalidArgument, "the apiserver refused the Volume: %v", err)
	case apierrors.IsForbidden(err):
		return status.Errorf(codes.PermissionDenied, "the driver's ServiceAccount may not do this: %v", err)
	}
	return status.Errorf(codes.Unavailable, "Kubernetes API: %v", err)
}
