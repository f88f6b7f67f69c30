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
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"sigs.k8s.io/yaml"

	"github.com/flint-io/flint/hack/internal/upstream"
	"github.com/flint-io/flint/test/e2e/lab"
)

// labSources are what the lab's images are built from beyond this
// repository: the sources (archives or git repositories) of the sidecars the Go
// module proxy does not serve (their go.mod names no /v2 module for their
// v2 tags, so no module version of them exists), and the directory of
// Kubernetes' e2e.test and agnhost for the storage suite's images.
type labSources struct{ registrar, livenessProbe, suiteAssets string }

// sidecarSource is where a sidecar's sources are given, and the project
// they are of (an archive is <project>-<tag>.tar.gz).
type sidecarSource struct {
	project string
	src     func(labSources) string
}

// sidecarRepos say how each sidecar the chart names is built: from a
// module pinned in hack/tools/csi-sidecars/<name>/go.mod (nil), or from
// the tag's sources given in labSources.
var sidecarRepos = map[string]*sidecarSource{
	"csi-provisioner":           nil,
	"csi-attacher":              nil,
	"csi-resizer":               nil,
	"csi-snapshotter":           nil,
	"csi-node-driver-registrar": {"node-driver-registrar", func(s labSources) string { return s.registrar }},
	"livenessprobe":             {"livenessprobe", func(s labSources) string { return s.livenessProbe }},
}

// labImages are the e2e lab's images, which nothing else ships: the pod
// sandbox, the kernel host storm's writer and the CSI sidecars, the
// sidecars named exactly as charts/flint/values.yaml names them so that
// the chart installs unchanged and nothing is pulled.
// A sidecar whose sources are not given is skipped, with the reason in
// the returned list; so are the storage suite's images (suite.go).
func labImages(srcs labSources, cache string, created time.Time) ([]image, []string, error) {
	pause := image{name: "pause", ref: lab.PauseImage, binary: "pause", compile: func(version string) ([]byte, error) {
		return goBuild(version, ".", "./test/e2e/pause")
	}}
	stormWriter := image{name: "storm-writer", ref: lab.StormWriterImage, binary: "stormwriter", user: "0:0", compile: func(version string) ([]byte, error) {
		return goBuild(version, ".", "./test/e2e/stormwriter")
	}}
	all := []image{pause, stormWriter}
	refs, err := chartSidecars()
	if err != nil {
		return nil, nil, err
	}
	var skipped []string
	for _, ref := range refs {
		name, tag := refNameTag(ref)
		repo, known := sidecarRepos[name]
		if !known {
			return nil, nil, fmt.Errorf("charts/flint/values.yaml names the sidecar %s, which the lab does not know how to build: add it to sidecarRepos", ref)
		}
		im := image{name: name, ref: ref, binary: name}
		switch {
		case repo == nil:
			if im, err = pinnedImage(ref); err != nil {
				return nil, nil, err
			}
		case repo.src(srcs) == "":
			skipped = append(skipped, fmt.Sprintf("%s skipped: the Go module proxy has no module of it; give its sources (CSI_REGISTRAR_SRC, CSI_LIVENESSPROBE_SRC: an archive or a git repository)", ref))
			continue
		default:
			src, project := repo.src(srcs), repo.project
			im.compile = func(string) ([]byte, error) { return buildFromTag(src, project, tag, "./cmd/"+name, cache) }
		}
		all = append(all, im)
	}
	// The cluster's part of VolumeSnapshots, which the chart leaves to it.
	snapshotController, err := pinnedImage(lab.SnapshotControllerImage)
	if err != nil {
		return nil, nil, err
	}
	all = append(all, snapshotController)
	if srcs.suiteAssets == "" {
		return all, append(skipped, "the storage e2e suite's images skipped: give -suite-assets"), nil
	}
	suite, err := suiteImages(srcs.suiteAssets, created)
	if err != nil {
		return nil, nil, err
	}
	return append(all, suite...), skipped, nil
}

// pinnedImage is the image ref of a command built from the module pinned
// in hack/tools/csi-sidecars/<name>/go.mod, name being ref's last path
// element.
func pinnedImage(ref string) (image, error) {
	name, tag := refNameTag(ref)
	modFile := filepath.Join("hack", "tools", "csi-sidecars", name, "go.mod")
	pkg, err := pinnedTool(modFile, tag)
	if err != nil {
		return image{}, err
	}
	return image{name: name, ref: ref, binary: name, compile: func(string) ([]byte, error) {
		return goBuild(tag, ".", "-modfile="+modFile, pkg)
	}}, nil
}

// refNameTag is the last path element of an image reference and its tag.
func refNameTag(ref string) (name, tag string) {
	name, tag, _ = strings.Cut(ref[strings.LastIndex(ref, "/")+1:], ":")
	return name, tag
}

// chartSidecars are the sidecar images of charts/flint/values.yaml.
func chartSidecars() ([]string, error) {
	data, err := os.ReadFile(filepath.Join("charts", "flint", "values.yaml"))
	if err != nil {
		return nil, err
	}
	var values struct {
		CSISidecars map[string]string `json:"csiSidecars"`
	}
	if err := yaml.Unmarshal(data, &values); err != nil {
		return nil, fmt.Errorf("charts/flint/values.yaml: %w", err)
	}
	var refs []string
	for _, ref := range values.CSISidecars {
		refs = append(refs, ref)
	}
	return refs, nil
}

// pinnedTool is the package modFile's tool directive names, after
// checking that modFile requires its module at tag.
func pinnedTool(modFile, tag string) (string, error) {
	data, err := os.ReadFile(modFile)
	if err != nil {
		return "", fmt.Errorf("the sidecar's pin: %w", err)
	}
	f, err := modfile.Parse(modFile, data, nil)
	if err != nil {
		return "", err
	}
	if len(f.Tool) != 1 {
		return "", fmt.Errorf("%s: want one tool directive, the sidecar's command", modFile)
	}
	pkg := f.Tool[0].Path
	for _, r := range f.Require {
		if strings.HasPrefix(pkg, r.Mod.Path+"/") {
			if r.Mod.Version != tag {
				return "", fmt.Errorf("%s pins %s at %s but charts/flint/values.yaml runs %s: go get -modfile=%s -tool %s@%s", modFile, r.Mod.Path, r.Mod.Version, tag, modFile, pkg, tag)
			}
			return pkg, nil
		}
	}
	return "", fmt.Errorf("%s requires no module of %s", modFile, pkg)
}

// buildFromTag builds pkg of project's sources at tag (an archive or a git
// repository, see hack/internal/upstream), with the modules it vendors.
func buildFromTag(src, project, tag, pkg, cache string) ([]byte, error) {
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(cache, "sidecar-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	source, err := upstream.Open(src, project, tag, tmp)
	if err != nil {
		return nil, err
	}
	tree := filepath.Join(tmp, "tree")
	if err := os.MkdirAll(tree, 0o755); err != nil {
		return nil, err
	}
	if err := source.Unpack(tree); err != nil {
		return nil, err
	}
	return goBuild(tag, tree, "-mod=vendor", pkg)
}

// goBuild builds a static binary in dir; args end with the package. The
// version goes where Flint's and the sidecars' mains read it.
func goBuild(version, dir string, args ...string) ([]byte, error) {
	out, err := os.MkdirTemp("", "flint-image-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(out) }()
	path := filepath.Join(out, "binary")
	ldflags := "-s -w -X main.version=" + version + " -X github.com/flint-io/flint/internal/version.Version=" + version
	cmd := exec.Command("go", append([]string{"build", "-trimpath", "-ldflags", ldflags, "-o", path}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOFLAGS=")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go build %s: %w", strings.Join(args, " "), err)
	}
	return os.ReadFile(path)
}
