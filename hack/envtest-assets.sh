#!/usr/bin/env bash
# Builds kube-apiserver, etcd and kubectl from the Go module proxy into a cache
# outside the repository and prints the directory for KUBEBUILDER_ASSETS. It
# also builds kube-controller-manager: the operator suite runs its garbage
# collector to prove owner references cascade.
#
# Arguments name more binaries of k8s.io/kubernetes/cmd to build into the same
# directory (the e2e lab asks for kubelet, kube-scheduler and kube-proxy),
# or e2e.test (Kubernetes' e2e suite, test/e2e) and agnhost (the suite's
# test image binary, test/images/agnhost).
#
# Idempotent: when the binaries exist for the pinned versions it only
# prints the directory. Everything comes from the Go module proxy; no
# prebuilt binary is downloaded.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.1}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
CACHE_ROOT="${FLINT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flint}"
ASSETS="$CACHE_ROOT/envtest/$K8S_VERSION"

KUBE_BINARIES=(kube-apiserver kube-controller-manager kubectl "$@")
BINARIES=("${KUBE_BINARIES[@]}" etcd)
have_all=true
for b in "${BINARIES[@]}"; do [[ -x "$ASSETS/$b" ]] || have_all=false; done
if $have_all; then
  echo "$ASSETS"
  exit 0
fi

staging_version="v0.${K8S_VERSION#v1.}"
work="$CACHE_ROOT/envtest/src-$K8S_VERSION"
mkdir -p "$ASSETS" "$work"
log() { echo "envtest-assets: $*" >&2; }
buildlog="$CACHE_ROOT/envtest/build-$K8S_VERSION.log"
: > "$buildlog"
# quiet runs a build step with its output in $buildlog, shown when it fails.
quiet() {
  if ! "$@" >>"$buildlog" 2>&1; then
    log "failed: $*"; tail -n 40 "$buildlog" >&2; exit 1
  fi
}

# k8s.io/kubernetes points every staging module at ./staging; a consumer has to
# replace each with the published module of the matching version.
log "resolving k8s.io/kubernetes $K8S_VERSION (staging modules at $staging_version)"
kube_mod=$(cd "$work" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$K8S_VERSION" 2>>"$buildlog" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
[[ -f "$kube_mod" ]] || { log "could not download k8s.io/kubernetes@$K8S_VERSION from the module proxy"; exit 1; }

{
  echo "module flint.local/envtest-assets"
  echo
  echo "go 1.26"
  echo
  echo "require k8s.io/kubernetes $K8S_VERSION"
  echo
  grep -E '^\s*k8s\.io/[a-z0-9-]+ => \./staging/' "$kube_mod" |
    awk -v v="$staging_version" '{print "replace " $1 " => " $1 " " v}'
} > "$work/go.mod"

log "building ${KUBE_BINARIES[*]} $K8S_VERSION (several minutes when cold)"
(
  cd "$work"
  export GOFLAGS=-mod=mod CGO_ENABLED=0
  quiet go get "k8s.io/kubernetes@$K8S_VERSION"
  # Stamp the version the release build would, so that clients see v1.37.x.
  minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  ldflags="-X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
  for b in "${KUBE_BINARIES[@]}"; do
    if [[ -x "$ASSETS/$b" ]]; then continue; fi
    case "$b" in
      e2e.test) quiet go test -c -trimpath -ldflags "$ldflags" -o "$ASSETS/$b.tmp" k8s.io/kubernetes/test/e2e ;;
      agnhost) quiet go build -trimpath -o "$ASSETS/$b.tmp" k8s.io/kubernetes/test/images/agnhost ;;
      *) quiet go build -trimpath -ldflags "$ldflags" -o "$ASSETS/$b.tmp" "k8s.io/kubernetes/cmd/$b" ;;
    esac
  done
)

etcd_work="$CACHE_ROOT/envtest/src-etcd-$ETCD_VERSION"
mkdir -p "$etcd_work"
[[ -x "$ASSETS/etcd" ]] || (
  log "building etcd $ETCD_VERSION"
  cd "$etcd_work"
  export GOFLAGS=-mod=mod CGO_ENABLED=0
  [[ -f go.mod ]] || quiet go mod init flint.local/etcd-assets
  quiet go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  quiet go build -trimpath -o "$ASSETS/etcd.tmp" go.etcd.io/etcd/server/v3
)

for b in "${BINARIES[@]}"; do
  if [[ -f "$ASSETS/$b.tmp" ]]; then mv "$ASSETS/$b.tmp" "$ASSETS/$b"; fi
done
log "ready: $ASSETS"
echo "$ASSETS"
