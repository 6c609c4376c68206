// softmax.cu: softmax over the last axis of a contiguous (rows, cols) array, and its backward.
//
// Reference: tricycle/functions.py softmax_forward / softmax_backward.
// One RowGroup (a warp for short rows, the block for long ones) per row. The forward reads the
// row twice: once for the max and the sum of exponentials together (online softmax), once to
// write exp(x - max) / sum; the second read mostly hits L1/L2. Bytes moved: read x once (plus a
// cached re-read), write y once, which is the floor for an unfused softmax.

template <typename T, bool WARP>
__global__ void softmax_forward_kernel(const T* __restrict__ x, T* __restrict__ y, int rows,
                                       int cols) {
    const RowGroup<WARP> g;
    if (g.row >= rows) return;  // whole warps only (WARP mode); a block always has its row
    const T* xr = x + (long long)g.row * cols;
    T* yr = y + (long long)g.row * cols;

    float m = -TC_INF, s = 0.f;
#pragma unroll 4
    for (int c = g.tid; c < cols; c += g.size) online_add(m, s, to_float(xr[c]));
    const float row_max = g.max(m);
    const float inv_sum = 1.f / g.sum(rescale_sum(m, s, row_max));

#pragma unroll 4
    for (int c = g.tid; c < cols; c += g.size)
        yr[c] = from_float<T>(expf(to_float(xr[c]) - row_max) * inv_sum);
}

// dx = y * (dy - sum(y * dy)): one reduction, then one elementwise pass.
template <typename T, bool WARP>
__global__ void softmax_backward_kernel(const T* __restrict__ y, const T* __restrict__ dy,
                                        T* __restrict__ dx, int rows, int cols) {
    const RowGroup<WARP> g;
    if (g.row >= rows) return;
    const long long offset = (long long)g.row * cols;
    const T* yr = y + offset;
    const T* dyr = dy + offset;
    T* dxr = dx + offset;

    float dot = 0.f;
#pragma unroll 4
    for (int c = g.tid; c < cols; c += g.size) dot += to_float(yr[c]) * to_float(dyr[c]);
    dot = g.sum(dot);

#pragma unroll 4
    for (int c = g.tid; c < cols; c += g.size) {
        const float yv = to_float(yr[c]);
        dxr[c] = from_float<T>(yv * (to_float(dyr[c]) - dot));
    }
}
