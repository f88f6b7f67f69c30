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

// Package server serves the OSD agent's gRPC API (api/v1) over mutual TLS,
// on top of the storage operations of package storage.
package server

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/flint-io/flint/internal/rpclog"
	"github.com/flint-io/flint/internal/spdk/client"
	"github.com/flint-io/flint/internal/spdk/jsonrpc"
	"github.com/flint-io/flint/internal/spdk/types"
	agentv1 "github.com/flint-io/flint/osd-image/agent/api/v1"
	"github.com/flint-io/flint/osd-image/agent/lease"
	"github.com/flint-io/flint/osd-image/agent/storage"
)

// Server implements agentv1.OSDAgentServer.
type Server struct {
	agentv1.UnimplementedOSDAgentServer
	engine   *storage.Engine
	spdk     *client.Client
	ready    func() error
	warnings func() []agentv1.PreflightFinding
	lease    *lease.Keeper
	// podUID is the uid of the agent's pod; "" outside a pod.
	podUID string
}

// New returns the API of o, whose SPDK spdk is; ready says whether the OSD
// is bootstrapped (nil) or why not; warnings are the preflight findings
// SPDK started despite; l is the OSD's lease, which gates every call that
// lets hosts reach a target; podUID is the uid of the agent's pod, whose
// calls alone it serves ("" outside a pod: it serves every call).
func New(engine *storage.Engine, spdk *client.Client, ready func() error, warnings func() []agentv1.PreflightFinding, l *lease.Keeper, podUID string) *Server {
	return &Server{engine: engine, spdk: spdk, ready: ready, warnings: warnings, lease: l, podUID: podUID}
}

// Serve serves the API on lis with mutual TLS until lis closes, logging
// every call to log.
func Serve(lis net.Listener, s *Server, tlsDir string, log logr.Logger) (*grpc.Server, error) {
	tlsConfig, err := MutualTLS(tlsDir, agentv1.OperatorClientName)
	if err != nil {
		return nil, err
	}
	g := grpc.NewServer(grpc.Creds(credentials.NewTLS(tlsConfig)), grpc.ChainUnaryInterceptor(rpclog.LogCalls(log), rpclog.RecoverPanics(log), s.onlyThisPod, s.gate))
	agentv1.RegisterOSDAgentServer(g, s)
	go func() { _ = g.Serve(lis) }()
	return g, nil
}

// onlyThisPod refuses a call meant for another pod (agentv1.PodUIDHeader)
// and names this agent's pod in every answer, which tells the operator
// that this agent refuses the calls meant for others.
func (s *Server) onlyThisPod(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
	if s.podUID == "" {
		return next(ctx, req)
	}
	if err := grpc.SetHeader(ctx, metadata.Pairs(agentv1.PodUIDHeader, s.podUID)); err != nil {
		return nil, status.Errorf(codes.Internal, "name the agent's pod in the answer: %v", err)
	}
	if want := metadata.ValueFromIncomingContext(ctx, agentv1.PodUIDHeader); len(want) > 0 && want[0] != s.podUID {
		return nil, agentv1.ErrorWithReason(codes.FailedPrecondition, agentv1.ReasonWrongPod,
			fmt.Sprintf("this agent runs in pod %s, not in pod %s the call was meant for: the OSD's pod was replaced; observe it again", s.podUID, want[0]))
	}
	return next(ctx, req)
}

// gate refuses every call but GetStatus while the OSD is not ready: before
// its bootstrap, or while SPDK restarts, nothing it holds can be changed.
func (s *Server) gate(ctx context.Context, req any, info *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
	if info.FullMethod != agentv1.OSDAgent_GetStatus_FullMethodName {
		if err := s.ready(); err != nil {
			return nil, status.Errorf(codes.Unavailable, "the OSD is not ready, retry later: %v", err)
		}
	}
	return next(ctx, req)
}

// notReadyCode classifies why the OSD is not ready, for the operator.
func notReadyCode(err error) agentv1.NotReadyCode {
	switch {
	case errors.Is(err, storage.ErrForeignDevice):
		return agentv1.NotReadyCode_NOT_READY_CODE_FOREIGN_DEVICE
	case errors.Is(err, storage.ErrConflict):
		return agentv1.NotReadyCode_NOT_READY_CODE_CONFLICT
	case errors.Is(err, storage.ErrWriteCache):
		return agentv1.NotReadyCode_NOT_READY_CODE_WRITE_CACHE
	case errors.Is(err, storage.ErrBlockSize):
		return agentv1.NotReadyCode_NOT_READY_CODE_BLOCK_SIZE
	case errors.Is(err, jsonrpc.ErrDisconnected):
		return agentv1.NotReadyCode_NOT_READY_CODE_SPDK_DOWN
	}
	return agentv1.NotReadyCode_NOT_READY_CODE_STARTING
}

// writeCacheOf is the API's name of a write cache state.
func writeCacheOf(w storage.WriteCache) agentv1.WriteCache {
	switch w {
	case storage.WriteCacheAbsent:
		return agentv1.WriteCache_WRITE_CACHE_ABSENT
	case storage.WriteCacheDisabled:
		return agentv1.WriteCache_WRITE_CACHE_DISABLED
	case storage.WriteCacheEnabled:
		return agentv1.WriteCache_WRITE_CACHE_ENABLED
	}
	return agentv1.WriteCache_WRITE_CACHE_UNKNOWN
}

// statusOf turns an error of the storage operations into the API's code:
// the one place where that mapping lives.
func statusOf(err error) error {
	if err == nil {
		return nil
	}
	code := codes.Internal
	var held *storage.MembersHeldError
	switch {
	case errors.As(err, &held):
		return agentv1.MembersHeldError(held.OSDs, err.Error())
	case errors.Is(err, storage.ErrInvalid):
		code = codes.InvalidArgument
	case errors.Is(err, storage.ErrNotFound):
		code = codes.NotFound
	case errors.Is(err, storage.ErrConflict):
		code = codes.AlreadyExists
	case errors.Is(err, storage.ErrInUse), errors.Is(err, storage.ErrForeignDevice), errors.Is(err, storage.ErrStaleEpoch):
		code = codes.FailedPrecondition
	case errors.Is(err, storage.ErrTargetLost):
		code = codes.Aborted
	case errors.Is(err, lease.ErrLapsed):
		return agentv1.ErrorWithReason(codes.FailedPrecondition, agentv1.ReasonLeaseLapsed, err.Error())
	case errors.Is(err, lease.ErrFenced):
		return agentv1.ErrorWithReason(codes.FailedPrecondition, agentv1.ReasonTargetFenced, err.Error())
	case errors.Is(err, jsonrpc.ErrDisconnected), errors.Is(err, storage.ErrNotBootstrapped):
		code = codes.Unavailable
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	}
	return status.Error(code, err.Error())
}

// RenewLease extends the OSD's lease. A renewal that arrives after its
// caller gave up is refused: the caller bounds when the lease may last
// have been renewed by its own deadline.
func (s *Server) RenewLease(ctx context.Context, req *agentv1.RenewLeaseRequest) (*agentv1.RenewLeaseResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, status.Error(codes.DeadlineExceeded, "the renewal came after its deadline")
	}
	// An operator from before not_after_unix_ms sends none: its renewals
	// hold from arrival, as they did, so that a rollback fences nothing.
	var notAfter time.Time
	if ms := req.GetNotAfterUnixMs(); ms != 0 {
		notAfter = time.UnixMilli(ms)
	}
	hold := time.Duration(req.GetHoldMs()) * time.Millisecond
	expiry, err := s.lease.Renew(time.Duration(req.GetDurationMs())*time.Millisecond, notAfter, hold)
	if errors.Is(err, lease.ErrLate) {
		return nil, status.Error(codes.DeadlineExceeded, err.Error())
	}
	if errors.Is(err, lease.ErrFencing) {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	resp := &agentv1.RenewLeaseResponse{ExpiryUnixMs: expiry.UnixMilli()}
	// The renewal stands whatever SPDK answers; the report is best effort.
	spdkCtx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	resp.DegradedVolumeUids, _ = s.engine.DegradedTargets(spdkCtx)
	return resp, nil
}

// GetStatus reports SPDK's version and everything the OSD holds, or why
// the OSD is not ready.
func (s *Server) GetStatus(ctx context.Context, _ *agentv1.GetStatusRequest) (*agentv1.OSDStatus, error) {
	if err := s.ready(); err != nil {
		return &agentv1.OSDStatus{Ready: false, NotReadyReason: err.Error(), NotReadyCode: notReadyCode(err), Endpoint: exportOf(s.engine.Endpoint()), LeaseExpiryUnixMs: s.lease.Expiry().UnixMilli()}, nil
	}
	v, err := s.spdk.SpdkGetVersion(ctx)
	if err != nil {
		return nil, statusOf(err)
	}
	inv, err := s.engine.Inventory(ctx)
	if err != nil {
		return nil, statusOf(err)
	}
	out := &agentv1.OSDStatus{
		Ready: true, SpdkVersion: v.Version, Lvstore: inv.Lvstore.Name,
		TotalBytes: inv.Lvstore.TotalBytes(), FreeBytes: inv.Lvstore.FreeBytes(), Endpoint: exportOf(s.engine.Endpoint()),
		LeaseExpiryUnixMs: s.lease.Expiry().UnixMilli(), WriteCache: writeCacheOf(s.engine.WriteCache()),
	}
	for _, w := range s.warnings() {
		out.PreflightWarnings = append(out.PreflightWarnings, &agentv1.PreflightWarning{Reason: w.Reason, Message: w.Message})
	}
	for v := range s.lease.Fenced() {
		out.FencedVolumes = append(out.FencedVolumes, v)
	}
	slices.Sort(out.FencedVolumes)
	out.HeldVolumes = slices.Sorted(maps.Keys(s.lease.HeldTargets()))
	for _, r := range inv.Replicas {
		out.Replicas = append(out.Replicas, replicaOf(r))
	}
	for _, sn := range inv.Snapshots {
		out.Snapshots = append(out.Snapshots, snapshotOf(sn))
	}
	for _, t := range inv.Targets {
		out.Targets = append(out.Targets, &agentv1.TargetSummary{
			VolumeUid: t.Volume, State: t.State, Members: uint32(t.Members), Online: uint32(t.Online), RebuildPercent: int32(t.RebuildPercent),
		})
	}
	return out, nil
}

// CreateReplica makes a volume's thin lvol.
func (s *Server) CreateReplica(ctx context.Context, req *agentv1.CreateReplicaRequest) (*agentv1.Replica, error) {
	r, err := s.engine.CreateReplica(ctx, req.GetVolumeUid(), req.GetSizeBytes())
	return replicaOf(r), statusOf(err)
}

// ResizeReplica grows a replica.
func (s *Server) ResizeReplica(ctx context.Context, req *agentv1.ResizeReplicaRequest) (*agentv1.Replica, error) {
	r, err := s.engine.ResizeReplica(ctx, req.GetVolumeUid(), req.GetSizeBytes())
	return replicaOf(r), statusOf(err)
}

// DeleteReplica removes a replica and its export.
func (s *Server) DeleteReplica(ctx context.Context, req *agentv1.DeleteReplicaRequest) (*agentv1.DeleteReplicaResponse, error) {
	return &agentv1.DeleteReplicaResponse{}, statusOf(s.engine.DeleteReplica(ctx, req.GetVolumeUid()))
}

// CreateSnapshot snapshots a replica.
func (s *Server) CreateSnapshot(ctx context.Context, req *agentv1.CreateSnapshotRequest) (*agentv1.Snapshot, error) {
	sn, err := s.engine.CreateSnapshot(ctx, req.GetVolumeUid(), req.GetSnapshot())
	return snapshotOf(sn), statusOf(err)
}

// CloneSnapshot makes a replica that is a thin clone of a snapshot.
func (s *Server) CloneSnapshot(ctx context.Context, req *agentv1.CloneSnapshotRequest) (*agentv1.Replica, error) {
	r, err := s.engine.CloneSnapshot(ctx, req.GetSnapshot(), req.GetVolumeUid())
	return replicaOf(r), statusOf(err)
}

// DeleteSnapshot removes a snapshot.
func (s *Server) DeleteSnapshot(ctx context.Context, req *agentv1.DeleteSnapshotRequest) (*agentv1.DeleteSnapshotResponse, error) {
	return &agentv1.DeleteSnapshotResponse{}, statusOf(s.engine.DeleteSnapshot(ctx, req.GetSnapshot()))
}

// ExportReplica exports a replica to its target only.
func (s *Server) ExportReplica(ctx context.Context, req *agentv1.ExportReplicaRequest) (*agentv1.Export, error) {
	e, err := s.engine.ExportReplica(ctx, req.GetVolumeUid(), req.GetTargetHostNqn(), req.GetEpoch(), keysOf(req.GetKeys()))
	return exportOf(e), statusOf(err)
}

// CutReplica cuts a replica's target off it, before an unplanned move.
func (s *Server) CutReplica(ctx context.Context, req *agentv1.CutReplicaRequest) (*agentv1.CutReplicaResponse, error) {
	return &agentv1.CutReplicaResponse{}, statusOf(s.engine.CutReplica(ctx, req.GetVolumeUid(), req.GetEpoch()))
}

// EnsureTarget makes this OSD serve a volume.
func (s *Server) EnsureTarget(ctx context.Context, req *agentv1.EnsureTargetRequest) (*agentv1.TargetStatus, error) {
	spec := storage.TargetSpec{
		Volume: req.GetVolumeUid(), Epoch: req.GetEpoch(), Hosts: req.GetHosts(), Resume: req.GetResume(),
		RebuildMaxMiBPerSec: req.GetRebuildMaxMibPerSec(), QoS: qosLimits(req.GetQos()),
		MemberKeys: keysOf(req.GetMemberKeys()), HostKeys: keysOf(req.GetHostKeys()),
	}
	for _, m := range req.GetMembers() {
		e := m.GetExport()
		spec.Members = append(spec.Members, storage.MemberSpec{
			OSD: m.GetOsd(), InSync: m.GetInSync(), Leaving: m.GetLeaving(), WaitRebuild: m.GetWaitRebuild(),
			Export: storage.Subsystem{NQN: e.GetNqn(), Transport: e.GetTransport(), Address: e.GetAddress(), Port: int(e.GetPort())},
		})
	}
	var st storage.Target
	err := s.lease.Serve(spec.Volume, req.GetConfirmed(), func() (err error) {
		st, err = s.engine.EnsureTarget(ctx, spec)
		return err
	})
	if err != nil {
		return nil, statusOf(err)
	}
	out := &agentv1.TargetStatus{Export: exportOf(st.Export), Degraded: st.Degraded(), SizeBytes: st.SizeBytes, AllowedHosts: st.AllowedHosts, Qos: qosOf(st.QoS)}
	for _, m := range st.Members {
		out.Members = append(out.Members, &agentv1.MemberStatus{Osd: m.OSD, State: m.State, RebuildPercent: uint32(m.RebuildPercent), HeldReason: m.HeldReason})
	}
	return out, nil
}

func keysOf(k *agentv1.DhchapKeys) storage.Keys {
	return storage.Keys{Secret: k.GetSecret(), CtrlSecret: k.GetCtrlSecret()}
}

// PrepareTarget makes a volume's subsystem here for a planned move, with
// no namespace. It lets hosts connect, so the lease gates it as a target
// change: a volume fenced here is prepared again only once confirmed by
// the move's EnsureTarget, so a standby is not made on a fenced OSD.
func (s *Server) PrepareTarget(ctx context.Context, req *agentv1.PrepareTargetRequest) (*agentv1.PreparedTarget, error) {
	spec := storage.StandbySpec{Volume: req.GetVolumeUid(), Epoch: req.GetEpoch(), Hosts: req.GetHosts(), HostKeys: keysOf(req.GetHostKeys())}
	var st storage.Standby
	err := s.lease.Serve(spec.Volume, false, func() (err error) {
		st, err = s.engine.PrepareTarget(ctx, spec)
		return err
	})
	if err != nil {
		return nil, statusOf(err)
	}
	return &agentv1.PreparedTarget{Export: exportOf(st.Export), ConnectedHosts: st.Connected, AllowedHosts: st.Allowed}, nil
}

// DeleteTarget stops serving a volume here.
func (s *Server) DeleteTarget(ctx context.Context, req *agentv1.DeleteTargetRequest) (*agentv1.DeleteTargetResponse, error) {
	st, err := s.engine.DeleteTarget(ctx, req.GetVolumeUid(), req.GetMemberOsds(), req.GetOutOfSyncOsds())
	if err != nil {
		return nil, statusOf(err)
	}
	return &agentv1.DeleteTargetResponse{RaidFound: st.RaidFound, InSyncOsds: st.InSync}, nil
}

// PauseTarget stops the I/O of a volume's hosts at its target.
func (s *Server) PauseTarget(ctx context.Context, req *agentv1.PauseTargetRequest) (*agentv1.PauseTargetResponse, error) {
	st, err := s.engine.PauseTarget(ctx, req.GetVolumeUid(), req.GetMemberOsds())
	if err != nil {
		return nil, statusOf(err)
	}
	return &agentv1.PauseTargetResponse{InSyncOsds: st.InSync}, nil
}

// ResumeTarget lets a paused volume's hosts back in.
func (s *Server) ResumeTarget(ctx context.Context, req *agentv1.ResumeTargetRequest) (*agentv1.ResumeTargetResponse, error) {
	return &agentv1.ResumeTargetResponse{}, statusOf(s.engine.ResumeTarget(ctx, req.GetVolumeUid()))
}

func replicaOf(r storage.Replica) *agentv1.Replica {
	return &agentv1.Replica{VolumeUid: r.Volume, Lvol: r.Lvol, SizeBytes: r.SizeBytes, AllocatedBytes: r.AllocatedBytes}
}

func snapshotOf(sn storage.Snapshot) *agentv1.Snapshot {
	return &agentv1.Snapshot{Name: sn.Name, Lvol: sn.Lvol, SizeBytes: sn.SizeBytes, AllocatedBytes: sn.AllocatedBytes}
}

func qosLimits(q *agentv1.QoS) types.QosLimits {
	return types.QosLimits{RwIOsPerSec: q.GetRwIosPerSec(), RwMbytesPerSec: q.GetRwMibPerSec(), RMbytesPerSec: q.GetRMibPerSec(), WMbytesPerSec: q.GetWMibPerSec()}
}

func qosOf(l types.QosLimits) *agentv1.QoS {
	return &agentv1.QoS{RwIosPerSec: l.RwIOsPerSec, RwMibPerSec: l.RwMbytesPerSec, RMibPerSec: l.RMbytesPerSec, WMibPerSec: l.WMbytesPerSec}
}

func exportOf(e storage.Subsystem) *agentv1.Export {
	return &agentv1.Export{Nqn: e.NQN, Transport: e.Transport, Address: e.Address, Port: uint32(e.Port)}
}
