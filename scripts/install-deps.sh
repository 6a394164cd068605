#!/usr/bin/env bash
# Installs the Debian packages slowpipe needs, and only those that are missing.
# Idempotent and non-interactive (CI runs with no standard input). Runs as root,
# or through sudo when it is available.
#   scripts/install-deps.sh          what `make demo` and `make test` need
#   scripts/install-deps.sh --fuzz   that, plus clang and its libFuzzer/sanitizer
#                                    runtimes (`make fuzz`); `make sanitize` uses GCC
#                                    and needs nothing extra
#   scripts/install-deps.sh --lint   that, plus clang-tidy (`make lint`)
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libtorch-dev            # libtorch 1.13, CPU build
  libgloo-dev             # Gloo headers: c10d's ProcessGroupGloo (distributed runs, distributed/)
  libopenblas0-pthread    # without it libtorch falls back to reference BLAS (~27x slower)
  libhdf5-dev hdf5-tools
  libboost-program-options-dev
  libfmt-dev zlib1g-dev
  catch2 libbenchmark-dev
  nlohmann-json3-dev
  gnuplot-nox
  parallel                # GNU parallel: tests/cli/test_sweep.sh runs `sweep --emit-jobs` output with it
  dataset-fashion-mnist   # /usr/share/datasets/fashion-mnist
  dict-gcide              # /usr/share/dictd/gcide.dict.dz
)
if [ "${1:-}" = "--fuzz" ]; then
  packages+=(
    clang                 # the libFuzzer targets need clang (-fsanitize=fuzzer)
    libclang-rt-14-dev    # libFuzzer, ASan and UBSan runtimes of clang 14
    llvm-14               # llvm-symbolizer: file:line in sanitizer reports
  )
elif [ "${1:-}" = "--lint" ]; then
  packages+=(
    clang-tidy            # clang-tidy and run-clang-tidy (scripts/lint.sh)
  )
elif [ -n "${1:-}" ]; then
  echo "install-deps: unknown argument '$1' (expected nothing, --fuzz or --lint)" >&2
  exit 2
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then
    sudo_cmd=(sudo -n)
  else
    echo "install-deps: missing packages (${missing[*]}) and not root, no sudo: install them as root" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq </dev/null
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" </dev/null
echo "install-deps: done"
