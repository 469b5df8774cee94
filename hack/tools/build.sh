#!/usr/bin/env bash
# Builds the test-bed tools from the pinned tools modules under hack/tools into bin/.
# Each tool is rebuilt only when its go.mod/go.sum (or this script) change: a stamp file
# next to the binaries records the hash they were built from.
#
#   hack/tools/build.sh            build every tool that is out of date
#   hack/tools/build.sh kube helm  build only the named tool modules
#   hack/tools/build.sh vpa        VPA v1.8.1 for make bench-vpa (not in the default list)
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
bin="$root/bin"
mkdir -p "$bin"
export CGO_ENABLED=0

stamp_of() { cat "$root/hack/tools/$1/go.mod" "$root/hack/tools/$1/go.sum" "$0" | sha256sum | cut -c1-16; }

build_kube() {
  local v=v1.37.2 minor=37
  local ld="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $p.gitVersion=$v -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  go build -trimpath -tags selinux,notest,grpcnotrace -ldflags "$ld" -o "$bin/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kubelet
}
build_etcd() { go build -trimpath -ldflags "-s -w" -o "$bin/etcd" go.etcd.io/etcd/server/v3; }
build_helm() { go build -trimpath -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=v4.3.2" -o "$bin/helm" helm.sh/helm/v4/cmd/helm; }
build_controller-gen() { go build -trimpath -ldflags "-s -w" -o "$bin/controller-gen" sigs.k8s.io/controller-tools/cmd/controller-gen; }
build_kwok() {
  go build -trimpath -ldflags "-s -w" -o "$bin/kwok" sigs.k8s.io/kwok/cmd/kwok
  # kwok refuses to start without Stage definitions; take the stock ones from its module source.
  local src
  src=$(go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage
  : >"$bin/kwok-stages.yaml"
  for f in node/fast/node-initialize node/heartbeat-with-lease/node-heartbeat-with-lease \
           pod/fast/pod-ready pod/fast/pod-complete pod/fast/pod-delete; do
    [ -f "$src/$f.yaml" ] || f=${f/\/fast\//\/general\/}
    { echo "---"; cat "$src/$f.yaml"; } >>"$bin/kwok-stages.yaml"
  done
}

# VPA v1.8.1 (recommender, updater, admission-controller) for the comparison bench only; the CRD
# manifest comes from the same module's source so the objects match the binaries.
build_vpa() {
  local m=k8s.io/autoscaler/vertical-pod-autoscaler/pkg c
  for c in recommender updater admission-controller; do
    go build -trimpath -ldflags "-s -w" -o "$bin/vpa-$c" "$m/$c"
  done
  cp "$(go list -m -f '{{.Dir}}' k8s.io/autoscaler/vertical-pod-autoscaler)/deploy/vpa-v1-crd-gen.yaml" "$bin/vpa-crds.yaml"
}

build_metrics-server() {
  go build -trimpath -ldflags "-s -w -X k8s.io/client-go/pkg/version.gitVersion=v0.8.0" \
    -o "$bin/metrics-server" sigs.k8s.io/metrics-server/cmd/metrics-server
}

# Prometheus v0.316.0 (server and promtool) for the day-0 backfill tests and bench. remove_all_sd drops
# every cloud service-discovery plugin (the tests use static_configs), which roughly halves the build.
build_prometheus() {
  local p=github.com/prometheus/common/version v=3.16.0
  go build -trimpath -tags remove_all_sd -ldflags "-s -w -X $p.Version=$v -X $p.Branch=v0.316.0" -o "$bin/" \
    github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus/cmd/promtool
}

tools=("$@")
[ ${#tools[@]} -gt 0 ] || tools=(controller-gen etcd helm kwok kube metrics-server prometheus)
for t in "${tools[@]}"; do
  want=$(stamp_of "$t")
  if [ "$(cat "$bin/.stamp-$t" 2>/dev/null)" = "$want" ]; then
    echo "tools: $t is up to date"
    continue
  fi
  echo "tools: building $t (pinned in hack/tools/$t/go.mod)..."
  start=$SECONDS
  (cd "$root/hack/tools/$t" && "build_$t")
  echo "$want" >"$bin/.stamp-$t"
  echo "tools: built $t in $((SECONDS - start))s"
done
