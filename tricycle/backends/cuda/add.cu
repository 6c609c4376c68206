// add.cu: out = a + b, elementwise, for the residual stream, the gradients that backward
// sums and a Dense layer's bias. b has a's shape, or (ROW) is one row of a's last axis
// repeated over its rows. Each sum is formed in float32 and rounded once to the storage type,
// as cupy's add. out may be a (an in-place bias add): no __restrict__ on a and out.
// VEC: four elements per load and store (load_chunk/store_chunk); the launcher checks that every
// pointer is aligned to four elements and that the sizes are multiples of four.

template <typename T, bool VEC, bool ROW>
__global__ void add_kernel(const T* a, const T* __restrict__ b, long long cols, T* out,
                           long long n) {
    constexpr int W = VEC ? 4 : 1;  // elements per load and store
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long start = (long long)blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll 4
    for (long long k = start; k < n / W; k += stride) {
        const long long i = W * k;
        float x[W], y[W];
        load_chunk<W>(a + i, x);
        load_chunk<W>(b + (ROW ? i % cols : i), y);
#pragma unroll
        for (int j = 0; j < W; ++j) x[j] += y[j];
        store_chunk<W>(out + i, x);
    }
}
