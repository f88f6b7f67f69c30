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

// Package netinfo finds the address an OSD listens on: the storage
// network's address from Multus' network-status for a secondary network
// (the RDMA VF), or the pod's own IP.
package netinfo

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
)

// NetworkStatus is one entry of Multus' k8s.v1.cni.cncf.io/network-status
// annotation.
type NetworkStatus struct {
	// Name is the attachment, namespace/name; the cluster network's is
	// the CNI's own name.
	Name      string   `json:"name"`
	Interface string   `json:"interface"`
	IPs       []string `json:"ips"`
	Default   bool     `json:"default"`
}

// ListenAddress returns the IPv4 address to listen on. With an attachment
// it is that network's address, read from statusFile (the annotation
// projected by the downward API); without one it is podIP.
func ListenAddress(attachment, statusFile, podIP string) (string, error) {
	if attachment == "" {
		ip := net.ParseIP(podIP).To4()
		if ip == nil {
			return "", fmt.Errorf("the pod IP %q is no IPv4 address; set POD_IP from status.podIP", podIP)
		}
		return ip.String(), nil
	}
	b, err := os.ReadFile(statusFile)
	if err != nil {
		return "", fmt.Errorf("read Multus' network status: %w", err)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return "", fmt.Errorf("%s is empty: Multus has not attached network %s yet; check that Multus runs and the pod's k8s.v1.cni.cncf.io/networks annotation names it", statusFile, attachment)
	}
	var nets []NetworkStatus
	if err := json.Unmarshal(b, &nets); err != nil {
		return "", fmt.Errorf("parse Multus' network status in %s: %w", statusFile, err)
	}
	var seen []string
	for _, n := range nets {
		seen = append(seen, n.Name)
		if !sameAttachment(n.Name, attachment) {
			continue
		}
		for _, a := range n.IPs {
			// Dotted quad, as SPDK's ipv4 listener takes it, even when
			// written IPv4-mapped (::ffff:a.b.c.d).
			if ip := net.ParseIP(a).To4(); ip != nil {
				return ip.String(), nil
			}
		}
		return "", fmt.Errorf("network %s (interface %s) has no IPv4 address (%v); give its NetworkAttachmentDefinition an IPAM that assigns one", attachment, n.Interface, n.IPs)
	}
	return "", fmt.Errorf("the pod is not attached to network %s (it has %v); check the NetworkAttachmentDefinition exists in that namespace", attachment, seen)
}

// sameAttachment matches Multus' namespace/name against an attachment
// given with or without its namespace.
func sameAttachment(status, attachment string) bool {
	if strings.Contains(attachment, "/") {
		return status == attachment
	}
	_, name, ok := strings.Cut(status, "/")
	return ok && name == attachment
}
