// dropout.cu: inverted dropout with the counter-based mask of tricycle/dropout_mask.py
// (``keep_bits`` over a (rows, cols) grid: element i is row i / cols, key i % cols):
// out = x * keep, keep = 0 or 1 / (1 - p), formed in float32 and rounded once. The mask is
// never stored: the backward runs the same kernel on dy with the same seed. The seed is read
// from device memory, so that a captured CUDA graph's replays each draw a new mask.

template <typename T>
__global__ void dropout_kernel(const T* __restrict__ x, T* __restrict__ out, long long cols,
                               long long n, const unsigned int* __restrict__ seed_ptr,
                               unsigned int threshold, float keep_scale) {
    const unsigned int seed = *seed_ptr;
    const long long stride = (long long)gridDim.x * blockDim.x;
#pragma unroll 4
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const long long row = i / cols;
        const unsigned int row_key = dropout_row_key(seed, (unsigned int)row);
        const float keep = dropout_keep(row_key, (int)(i - row * cols), threshold, keep_scale);
        out[i] = from_float<T>(to_float(x[i]) * keep);
    }
}
