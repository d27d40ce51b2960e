#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, etcd and a hollow kubelet
# (kubemark) from Go modules into a cache directory outside the repository,
# keyed by version. No upstream source is committed: it comes from the module
# proxy at build time; only the hollow kubelet's small main
# (hollow-kubelet/main.go) is ours.
#
# Usage: build-binaries.sh CACHE_DIR K8S_VERSION ETCD_VERSION HOLLOW_KEY
#        build-binaries.sh --kubectl OUT_DIR K8S_VERSION
# Produces CACHE_DIR/kube-apiserver-K8S_VERSION/kube-apiserver,
#          CACHE_DIR/kube-controller-manager-K8S_VERSION/kube-controller-manager,
#          CACHE_DIR/hollow-kubelet-K8S_VERSION-HOLLOW_KEY/hollow-kubelet and
#          CACHE_DIR/etcd-ETCD_VERSION/etcd
# (HOLLOW_KEY is a hash of hollow-kubelet/*.go, so editing them builds anew)
# Only missing binaries are built; each has its own directory, so adding a
# binary never invalidates the ones already cached.
# --kubectl builds only kubectl (k8s.io/kubernetes/cmd/kubectl at K8S_VERSION)
# into OUT_DIR/kubectl: the tests' kubectl (test/helpers/kubectl.ts), cached
# under its own key so it never touches the control plane's cache entries; it
# shares the module and build caches, so it compiles only what is kubectl's.
# Each binary is built in a scratch module and moved into place only when the
# build succeeded, so a half-built binary is never mistaken for a cached one.
set -euo pipefail

kubectl_out=
if [ "${1:-}" = --kubectl ]; then
  kubectl_out=$2 k8s=$3
  cache=$(dirname "$kubectl_out")
else
  cache=$1 k8s=$2 etcd=$3 hollow_key=$4
fi
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0

# Scratch modules are removed however the script ends (set -e included).
scratch=()
cleanup() { [ ${#scratch[@]} -eq 0 ] || rm -rf "${scratch[@]}"; }
trap cleanup EXIT

step() { printf '[controlplane-build] %s\n' "$*" >&2; }

# k8s_module WORK NAME: writes WORK/go.mod for module ccmbuild/NAME that pins
# k8s.io/kubernetes@$k8s and its staging modules.
k8s_module() {
  local work=$1 name=$2
  local minor=${k8s#v1.}             # 34.4
  local staging="v0.$minor"          # v0.34.4
  step "resolving k8s.io/kubernetes@$k8s (staging modules at $staging)"
  # k8s.io/kubernetes maps its staging modules with replace directives that do
  # not apply to dependents: read them from its go.mod and pin each one.
  local modfile
  modfile=$(cd "$work" && go mod download -json "k8s.io/kubernetes@$k8s" 2>/dev/null | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  if [ -z "$modfile" ]; then
    # go mod download needs a module context in some Go versions
    (cd "$work" && printf 'module ccmbuild\n\ngo 1.24\n' > go.mod && go mod download -json "k8s.io/kubernetes@$k8s" > dl.json)
    modfile=$(sed -n 's/.*"GoMod": "\(.*\)".*/\1/p' "$work/dl.json")
  fi
  {
    printf 'module ccmbuild/%s\n\ngo 1.24.0\n\n' "$name"
    grep -E '^\s*k8s\.io/[a-z0-9-]+ => \./staging/' "$modfile" | awk -v v="$staging" '{print "replace " $1 " => " $1 " " v}'
  } > "$work/go.mod"
}

# k8s_ldflags: strips symbols and stamps the Kubernetes version.
k8s_ldflags() {
  local minor=${k8s#v1.} pkg=k8s.io/component-base/version
  printf '%s' "-s -w -X $pkg.gitVersion=$k8s -X $pkg.gitMajor=1 -X $pkg.gitMinor=${minor%%.*} -X $pkg.gitTreeState=clean"
}

# build_k8s_cmd NAME [OUT]: builds k8s.io/kubernetes/cmd/NAME at $k8s into
# OUT/NAME, OUT defaulting to $cache/NAME-$k8s (kube-apiserver,
# kube-controller-manager; kubectl with --kubectl).
build_k8s_cmd() {
  local name=$1
  local out=${2:-"$cache/$name-$k8s"}
  [ -x "$out/$name" ] && return 0
  local work; work=$(mktemp -d "$cache/.build-$name.XXXXXX")
  scratch+=("$work")
  k8s_module "$work" "$name"
  step "downloading modules (first run only; this takes a few minutes)"
  (cd "$work" && go get "k8s.io/kubernetes/cmd/$name@$k8s" >&2)
  step "compiling $name $k8s (first run only; this takes several minutes on 2 cores)"
  (cd "$work" && go build -trimpath -ldflags "$(k8s_ldflags)" -o "$work/$name" "k8s.io/kubernetes/cmd/$name" >&2)
  mkdir -p "$out" && mv "$work/$name" "$out/$name"
  step "$name ready: $out/$name"
}

# build_hollow_kubelet: builds our main around k8s.io/kubernetes/pkg/kubemark
# (hollow-kubelet/*.go beside this script: kubemark's hollow kubelet set up
# as an external-cloud kubelet) at $k8s into
# $cache/hollow-kubelet-$k8s-$hollow_key/hollow-kubelet.
build_hollow_kubelet() {
  local out="$cache/hollow-kubelet-$k8s-$hollow_key"
  [ -x "$out/hollow-kubelet" ] && return 0
  local work; work=$(mktemp -d "$cache/.build-hollow-kubelet.XXXXXX")
  scratch+=("$work")
  k8s_module "$work" hollow-kubelet
  cp "$(dirname "$0")"/hollow-kubelet/*.go "$work/"
  step "downloading modules for hollow-kubelet (first run only)"
  (cd "$work" && go get "k8s.io/kubernetes@$k8s" >&2 && go mod tidy >&2)
  # cri-client's NewRemoteRuntimeService took a logger up to v1.36 and takes a
  # context from v1.37: the tag picks cri_ctx.go or cri_logger.go by the
  # signature this version's module really has.
  local tags=
  if grep -q 'func NewRemoteRuntimeService(ctx context.Context' "$(cd "$work" && go list -m -f '{{.Dir}}' k8s.io/cri-client)/pkg/remote_runtime.go"; then tags=cri_ctx; fi
  step "compiling hollow-kubelet $k8s (first run only; several minutes on 2 cores)"
  (cd "$work" && go build -trimpath -tags "$tags" -ldflags "$(k8s_ldflags)" -o "$work/hollow-kubelet" . >&2)
  mkdir -p "$out" && mv "$work/hollow-kubelet" "$out/hollow-kubelet"
  step "hollow-kubelet ready: $out/hollow-kubelet"
}

build_etcd() {
  local out="$cache/etcd-$etcd"
  [ -x "$out/etcd" ] && return 0
  local work; work=$(mktemp -d "$cache/.build-etcd.XXXXXX")
  scratch+=("$work")
  step "building etcd $etcd from go.etcd.io/etcd/server/v3"
  printf 'module ccmbuild/etcd\n\ngo 1.24.0\n' > "$work/go.mod"
  # The etcd server module has no main package; this two-line main calls it.
  printf 'package main\n\nimport (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\nfunc main() { etcdmain.Main(os.Args) }\n' > "$work/main.go"
  (cd "$work" && go get "go.etcd.io/etcd/server/v3@$etcd" >&2 && go mod tidy >&2 && go build -trimpath -ldflags "-s -w" -o "$work/etcd" . >&2)
  mkdir -p "$out" && mv "$work/etcd" "$out/etcd"
  step "etcd ready: $out/etcd"
}

mkdir -p "$cache"
if [ -n "$kubectl_out" ]; then
  build_k8s_cmd kubectl "$kubectl_out"
  exit 0
fi
build_etcd
build_k8s_cmd kube-apiserver
build_k8s_cmd kube-controller-manager
build_hollow_kubelet
