# Sourced by gpu_check.sh and gpu_fidelity.sh, which set HERE (this folder) and ROOT (the
# checkout): the Python to run (PY), CUDA_HOME where the toolkit is in its usual place, a
# fresh build cache unless one is given, and, where the project is not installed, this
# checkout on PYTHONPATH (with the packages the image lacks from .whl, made by gpu_wheels.sh).
# Sets GPU_NAME (empty without nvidia-smi).
PY="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1
if [ -z "${CUDA_HOME:-}" ] && [ -d /usr/local/cuda ]; then export CUDA_HOME=/usr/local/cuda; fi
export AUTOCOMP_CUDA_CACHE="${AUTOCOMP_CUDA_CACHE:-$(mktemp -d)}"
if ! "$PY" -c "import autocomp_cuda" 2>/dev/null; then
  if [ -d "$ROOT/.whl" ]; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/autocomp-site "$ROOT"/.whl/*.whl
    export PYTHONPATH="/tmp/autocomp-site${PYTHONPATH:+:$PYTHONPATH}"
  fi
  export PYTHONPATH="$ROOT:$HERE:${PYTHONPATH:-}"
  export AUTOCOMP_PLUGINS=autocomp_cuda.plugin  # the entry point of an installed plugin
fi
GPU_NAME="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
