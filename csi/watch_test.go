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
	"sync/atomic"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	flintv1 "github.com/flint-io/flint/api/v1alpha1"
)

// countingReader counts reads that go to the apiserver.
type countingReader struct {
	client.Reader
	gets atomic.Int32
}

func (r *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.gets.Add(1)
	return r.Reader.Get(ctx, key, obj, opts...)
}

// eventController waits on Volume events only: its polling interval is
// longer than any test, so a wait that ends was woken by an event.
func eventController(t *testing.T, objs ...client.Object) (*Controller, client.Client, *countingReader) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := flintv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	live := &countingReader{Reader: c}
	return &Controller{Client: c, APIReader: live, Events: &VolumeEvents{}, PollInterval: time.Hour, MaxWait: time.Hour}, c, live
}

// woken runs a wait that only an event can end, and fails the test if it
// has not ended well after the event was sent.
func woken(t *testing.T, wait func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- wait(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the wait did not end on the Volume's event")
	}
}

// A wait ends when the Volume's informer reports the change it waits for.
func TestAWaitEndsOnTheVolumesEvent(t *testing.T) {
	const host = "nqn.2014-08.org.nvmexpress:uuid:a"
	c, cl, _ := eventController(t, &flintv1.Volume{ObjectMeta: metav1.ObjectMeta{Name: "v"}})
	go func() {
		time.Sleep(50 * time.Millisecond)
		var v flintv1.Volume
		if err := cl.Get(context.Background(), client.ObjectKey{Name: "v"}, &v); err != nil {
			t.Error(err)
			return
		}
		v.Status.Target = &flintv1.VolumeTarget{AllowedHosts: []string{host}}
		if err := cl.Update(context.Background(), &v); err != nil {
			t.Error(err)
			return
		}
		c.Events.Changed("v")
	}()
	woken(t, func(ctx context.Context) error {
		_, err := c.waitUntil(ctx, "v", "exported to "+host, func(v *flintv1.Volume) bool { return allows(v, host) })
		return err
	})
}

// Deleting waits on the cache for the operator to finish, and asks the
// apiserver only to read the Volume first and to confirm it is gone.
func TestDeleteWaitsOnTheCache(t *testing.T) {
	c, cl, live := eventController(t, &flintv1.Volume{ObjectMeta: metav1.ObjectMeta{Name: "v", Finalizers: []string{flintv1.VolumeFinalizer}}})
	go func() {
		time.Sleep(50 * time.Millisecond)
		for range 3 { // the operator's passes before it lets go
			c.Events.Changed("v")
			time.Sleep(10 * time.Millisecond)
		}
		var v flintv1.Volume
		if err := cl.Get(context.Background(), client.ObjectKey{Name: "v"}, &v); err != nil {
			t.Error(err)
			return
		}
		v.Finalizers = nil
		if err := cl.Update(context.Background(), &v); err != nil {
			t.Error(err)
			return
		}
		c.Events.Changed("v")
	}()
	woken(t, func(ctx context.Context) error {
		_, err := c.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: "v"})
		return err
	})
	if n := live.gets.Load(); n != 2 {
		t.Fatalf("DeleteVolume read the apiserver %d times, want 2 (the first read and the confirmation)", n)
	}
}
