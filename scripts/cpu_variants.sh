#!/usr/bin/env bash
# Run the test suite under the CPU-kernel variations other machines have.
#
# numpy picks SIMD loops (AVX-512, AVX2/FMA3, SSE) and OpenBLAS picks GEMM/dot kernels by
# the CPU, so reductions, BLAS products and exp/log/pow differ in their last bits from one
# machine to another: a test that compares two such computations bit for bit is green on
# the machine it was written on and red elsewhere. Each variant below forces the kernels of
# another CPU on this one and prints what numpy and OpenBLAS really used, and the counts.
#
# Usage: scripts/cpu_variants.sh [pytest arguments]     (default: -n 2 tests)
#        PYTHON=path/to/python scripts/cpu_variants.sh   (default: .venv/bin/python)
set -u
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ $# -gt 0 ] || set -- -n 2 tests

# numpy's names for its dispatch targets change between versions (numpy 2.4: X86_V3, X86_V4,
# AVX512_ICL, AVX512_SPR; numpy 1.26: AVX2, FMA3, AVX512F, AVX512_SKX, ...): ask it which it has.
dispatch=$("$PY" -c 'from numpy._core._multiarray_umath import __cpu_dispatch__ as d; print(" ".join(d))' 2>/dev/null ||
           "$PY" -c 'from numpy.core._multiarray_umath import __cpu_dispatch__ as d; print(" ".join(d))')
no_avx512=$(for f in $dispatch; do case $f in *AVX512*|X86_V4) echo -n "$f ";; esac; done)
no_avx2=$(for f in $dispatch; do case $f in *AVX512*|X86_V4|X86_V3|AVX2|FMA3) echo -n "$f ";; esac; done)

variants=(
  "as installed|"
  "OpenBLAS Haswell kernels (OPENBLAS_CORETYPE=Zen runs them too)|OPENBLAS_CORETYPE=Haswell"
  "OpenBLAS SkylakeX kernels (AVX-512)|OPENBLAS_CORETYPE=SkylakeX"
  "OpenBLAS Sandybridge kernels (AVX, no FMA)|OPENBLAS_CORETYPE=Sandybridge"
  "numpy without AVX-512|NPY_DISABLE_CPU_FEATURES=${no_avx512% }"
  "numpy without AVX2, FMA3, AVX-512|NPY_DISABLE_CPU_FEATURES=${no_avx2% }"
  "an AMD EPYC without AVX-512: both of the above|OPENBLAS_CORETYPE=Haswell|NPY_DISABLE_CPU_FEATURES=${no_avx512% }"
  # A threaded dot or gemv splits its sum between threads: another thread count adds in another order
  # (OpenBLAS caps the count at the cores this machine has, so only fewer threads can be tried).
  "OpenBLAS on one thread|OPENBLAS_NUM_THREADS=1"
)

status=0
for variant in "${variants[@]}"; do
  IFS='|' read -r -a parts <<< "$variant"
  label=${parts[0]}
  settings=("${parts[@]:1}")
  preset=$(env | grep -E '^(OPENBLAS_CORETYPE|NPY_DISABLE_CPU_FEATURES)=' | tr '\n' ' ')
  echo "== $label: ${settings[*]:-${preset:-no OPENBLAS_CORETYPE or NPY_DISABLE_CPU_FEATURES set}}"
  env "${settings[@]}" "$PY" -W ignore -c '
import numpy as np
try:
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
except ImportError:
    from numpy.core._multiarray_umath import __cpu_dispatch__, __cpu_features__
try:
    import threadpoolctl   # scikit-learn brings it (make test installs the examples extra)
    blas = [(i.get("architecture"), i["num_threads"]) for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
except ImportError:
    blas = "unknown (pip install threadpoolctl)"
print("   numpy", np.__version__, "| SIMD targets on:", [f for f in __cpu_dispatch__ if __cpu_features__.get(f)],
      "| OpenBLAS kernel, threads:", blas)'
  out=$(env "${settings[@]}" "$PY" -m pytest -p no:cacheprovider "$@" 2>&1)
  rc=$?
  echo "$out" | grep -E "^(FAILED|ERROR) " | sed 's/^/   /'
  echo "   $(echo "$out" | grep -E "[0-9]+ (passed|failed)" | tail -1) (exit $rc)"
  [ $rc -eq 0 ] || status=1
done
exit $status
