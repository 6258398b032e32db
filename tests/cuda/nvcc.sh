# nvcc.sh - sourced by the tests/cuda scripts: sets nvcc to the CUDA
# toolkit's compiler, found as mlcc finds it ($CUDA_PATH/bin, then
# /usr/local/cuda/bin, then PATH), and cuda_home to its toolkit folder;
# nvcc is empty when there is none.
nvcc=""
cuda_home=""
for c in ${CUDA_PATH:+"$CUDA_PATH/bin/nvcc"} /usr/local/cuda/bin/nvcc "$(command -v nvcc || true)"; do
  [[ -n $c && -x $c ]] && { nvcc=$c; break; }
done
[[ -z $nvcc ]] || cuda_home=$(cd "$(dirname "$nvcc")/.." && pwd)
