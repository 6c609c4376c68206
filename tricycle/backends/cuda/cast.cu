// cast.cu: many float32 tensors cast to one 16-bit dtype in one launch.
//
// Reference: tricycle/precision.py cast_all (``a.astype(dtype)`` per tensor). Mixed precision
// casts every parameter at every forward; one launch for all of them (instead of one astype
// each, ~25 us of host time apiece) writes them into one flat buffer, at offsets aligned to
// 64 elements so that every tensor's view starts 128-byte aligned (cuBLAS and the float4
// loads of the other kernels want that). Block b casts chunk b of the concatenation, looked
// up as in adamw.cu's multi-tensor kernels.
template <typename T>
__global__ void multi_cast_kernel(const long long* __restrict__ sources,
                                  const long long* __restrict__ offsets,
                                  const long long* __restrict__ sizes,
                                  const int* __restrict__ block_tensor,
                                  const long long* __restrict__ block_start, int chunk,
                                  T* __restrict__ out) {
    const int t = block_tensor[blockIdx.x];
    const long long start = block_start[blockIdx.x];
    const long long end = min(start + (long long)chunk, sizes[t]);
    const float* __restrict__ source = reinterpret_cast<const float*>(sources[t]);
    T* __restrict__ target = out + offsets[t];
#pragma unroll 4
    for (long long i = start + threadIdx.x; i < end; i += blockDim.x)
        target[i] = from_float<T>(source[i]);
}

// One 16-bit tensor widened to float32: the gradient of a parameter's cast in mixed precision
// (tricycle/precision.py, the back_fn of a cast node; reference: ``grad.astype(float32)``).
// Exact (every 16-bit value is a float32). One precompiled launch costs the host less than
// CuPy's astype, and mixed precision widens every parameter's gradient at every step.
template <typename T>
__global__ void widen_kernel(const T* __restrict__ source, float* __restrict__ target,
                             long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
#pragma unroll 4
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        target[i] = to_float(source[i]);
}
