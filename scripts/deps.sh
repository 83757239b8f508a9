#!/usr/bin/env bash
# deps.sh: install what lowband's tests and benchmarks need beyond Go itself: Fashion-MNIST
# from Debian's dataset-fashion-mnist package, and Debian's chromium for the dashboard's
# browser tests. Idempotent.
set -euo pipefail
pkgs=()
[[ -d /usr/share/datasets/fashion-mnist ]] || pkgs+=(dataset-fashion-mnist)
command -v chromium >/dev/null || pkgs+=(chromium)
if (( ${#pkgs[@]} == 0 )); then
  exit 0
fi
sudo=""
[[ $(id -u) == 0 ]] || sudo=sudo
echo "deps: installing ${pkgs[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${pkgs[@]}" >/dev/null
