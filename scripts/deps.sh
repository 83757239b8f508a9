#!/usr/bin/env bash
# deps.sh: install what lowband's tests and benchmarks need beyond Go itself.
# Today that is Fashion-MNIST from Debian's dataset-fashion-mnist package. Idempotent.
set -euo pipefail
if [[ -d /usr/share/datasets/fashion-mnist ]]; then
  exit 0
fi
sudo=""
[[ $(id -u) == 0 ]] || sudo=sudo
echo "deps: installing dataset-fashion-mnist"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq dataset-fashion-mnist >/dev/null
