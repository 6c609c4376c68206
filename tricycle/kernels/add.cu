// add.cu: out = a + b, elementwise, for the residual stream, the gradients that backward
// sums and a Dense layer's bias. b has a's shape, or (ROW) is one row of a's last axis
// repeated over its rows. Each sum is formed in float32 and rounded once to the storage type,
// as cupy's add. out may be a (an in-place bias add): no __restrict__ on a and out.
// VEC: four elements per load and store (load4/store4); the launcher checks that every
// pointer is aligned to four elements and that the sizes are multiples of four.

template <typename T, bool VEC, bool ROW>
__global__ void add_kernel(const T* a, const T* __restrict__ b, long long cols, T* out,
                           long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long start = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if constexpr (VEC) {
#pragma unroll 4
        for (long long k = start; k < n / 4; k += stride) {
            const long long i = 4 * k;
            const float4 x = load4(a + i), y = load4(b + (ROW ? i % cols : i));
            store4(out + i, x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
        }
    } else {
#pragma unroll 4
        for (long long i = start; i < n; i += stride)
            out[i] = from_float<T>(to_float(a[i]) + to_float(b[ROW ? i % cols : i]));
    }
}
