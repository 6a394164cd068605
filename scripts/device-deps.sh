#!/usr/bin/env bash
# Downloads, here, the Debian packages a GPU machine needs to build
# slowpipe-torch against its own CUDA libtorch, into .devdeps/ (ignored by
# git): HDF5 (C and C++), Boost.Program_options and the Boost headers, fmt,
# nlohmann-json, Catch2 and the Gloo headers, about 15 MB of .deb files.
# scripts/device-check.sh unpacks them there into a folder of their own (never
# into /). Needs apt-get and Debian's package registry; nothing else is
# installed or changed here.
#   scripts/device-deps.sh [DIR]     (default .devdeps)
set -euo pipefail

dir=${1:-.devdeps}
packages=(libhdf5-dev libhdf5-103-1 libhdf5-cpp-103-1 libhdf5-hl-100 libhdf5-hl-cpp-100
  libsz2 libaec0 libaec-dev libboost1.74-dev libboost-program-options1.74-dev
  libboost-program-options1.74.0 libfmt-dev libfmt9 nlohmann-json3-dev catch2 libgloo-dev zlib1g-dev)
mkdir -p "$dir"
cd "$dir"
apt-get download "${packages[@]}" 2>&1 | grep -v "^W: Download is performed unsandboxed" || true
for p in "${packages[@]}"; do
  ls "${p}"_*.deb >/dev/null 2>&1 || { echo "device-deps: '$p' was not downloaded" >&2; exit 1; }
done
echo "device-deps: ${#packages[@]} packages in $dir ($(du -sh . | cut -f1))"
