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

package main

import (
	"archive/tar"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// suiteImages are the images the storage tests of Kubernetes' e2e suite
// run, under the references e2e.test lists (--list-images), so that it
// pulls nothing:
//   - busybox: Debian's static busybox with its applets, as the
//     e2e-test-images busybox is;
//   - agnhost: the e2e suite's own binary, built from k8s.io/kubernetes
//     at the suite's version, on that busybox;
//   - nginx: Debian's nginx (the storage tests only run a shell in it);
//   - glibc-dns-testing: Debian with dnsutils, as the suite's own is (the
//     storage tests run shell commands in it).
func suiteImages(assets string, created time.Time) ([]image, error) {
	out, err := exec.Command(filepath.Join(assets, "e2e.test"), "--list-images").Output()
	if err != nil {
		return nil, fmt.Errorf("list the e2e suite's images (%s/e2e.test --list-images): %w", assets, err)
	}
	// The suite lists some images at two versions (the previous one for
	// upgrade tests); one image answers to both.
	refs := map[string][]string{}
	for _, ref := range strings.Fields(string(out)) {
		if name, _ := refNameTag(ref); strings.HasPrefix(ref, "registry.k8s.io/e2e-test-images/") {
			refs[name] = append(refs[name], ref)
		}
	}
	for _, name := range []string{"busybox", "agnhost", "nginx", "glibc-dns-testing"} {
		if len(refs[name]) == 0 {
			return nil, fmt.Errorf("e2e.test --list-images names no registry.k8s.io/e2e-test-images/%s", name)
		}
		slices.Sort(refs[name])
	}
	busybox, err := busyboxLayer(created)
	if err != nil {
		return nil, err
	}
	agnhost, err := os.ReadFile(filepath.Join(assets, "agnhost"))
	if err != nil {
		return nil, fmt.Errorf("agnhost (hack/envtest-assets.sh agnhost): %w", err)
	}
	agnhostLayer, err := fileLayer("agnhost", agnhost, created)
	if err != nil {
		return nil, err
	}
	return []image{
		{name: "e2e-busybox", ref: refs["busybox"][0], aliases: refs["busybox"][1:], layers: []v1.Layer{busybox}, cmd: []string{"sh"}},
		{name: "e2e-agnhost", ref: refs["agnhost"][0], aliases: refs["agnhost"][1:], layers: []v1.Layer{busybox, agnhostLayer}, entrypoint: []string{"/agnhost"}, cmd: []string{"pause"}},
		{name: "e2e-nginx", ref: refs["nginx"][0], aliases: refs["nginx"][1:], packages: []string{"nginx-light"}, entrypoint: []string{"nginx", "-g", "daemon off;"}},
		{name: "e2e-glibc-dns-testing", ref: refs["glibc-dns-testing"][0], aliases: refs["glibc-dns-testing"][1:], packages: []string{"dnsutils"}, cmd: []string{"sh"}},
	}, nil
}

// busyboxLayer holds this machine's static busybox (Debian's
// busybox-static) at /bin/busybox and a link in /bin for each applet.
func busyboxLayer(mtime time.Time) (v1.Layer, error) {
	path, err := exec.LookPath("busybox")
	if err != nil {
		return nil, fmt.Errorf("busybox is missing: apt-get install busybox-static (the e2e suite's busybox image holds it)")
	}
	bin, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	applets, err := exec.Command(path, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("busybox --list: %w", err)
	}
	return tarLayer(func(tw *tar.Writer) error {
		for _, dir := range []*tar.Header{
			{Typeflag: tar.TypeDir, Name: "bin/", Mode: 0o755, ModTime: mtime},
			{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777, ModTime: mtime},
		} {
			if err := tw.WriteHeader(dir); err != nil {
				return err
			}
		}
		if err := writeExecutable(tw, "bin/busybox", bin, mtime); err != nil {
			return err
		}
		for _, applet := range strings.Fields(string(applets)) {
			if applet == "busybox" {
				continue
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + applet, Linkname: "busybox", Mode: 0o777, ModTime: mtime}); err != nil {
				return err
			}
		}
		return nil
	})
}
