// norm.cu: layer norm and RMS norm over the last axis, forward and backward.
//
// Reference: tricycle/norms.py layer_norm_forward/backward, rms_norm_forward/backward.
// T is the activation type (x, y, dy, dx), P the parameter type (gamma, beta, dgamma, dbeta);
// statistics (mean, rstd) are always float32, one per row.
//
// Forward: one RowGroup per row; the mean and the variance are two separate passes
// (sum(x) then sum((x - mean)^2)) rather than sum(x^2) - mean^2, which cancels badly.
//
// Backward: dx is per row, but dgamma/dbeta sum over all rows. Each warp owns a private
// accumulator slice of 2*cols floats (in shared memory, or in global scratch for very wide
// rows) and each lane owns fixed columns of it, so there are no atomics and the result is
// deterministic. The block then folds its warps' slices into one partial row, and
// norm_reduce_kernel sums the partial rows.

// VEC: four elements per load and store (W = 4); the launcher checks that the row length is a
// multiple of four and every array is aligned to four elements. W = 1 otherwise.
template <typename T, typename P, bool WARP, bool RMS, bool VEC>
__global__ void norm_forward_kernel(const T* __restrict__ x, const P* __restrict__ gamma,
                                    const P* __restrict__ beta, int has_beta,
                                    T* __restrict__ y, float* __restrict__ mean_out,
                                    float* __restrict__ rstd_out, int rows, int cols,
                                    float eps) {
    constexpr int W = VEC ? 4 : 1;
    const RowGroup<WARP> g;
    if (g.row >= rows) return;
    const T* xr = x + (long long)g.row * cols;
    T* yr = y + (long long)g.row * cols;
    float v[W];

    float mean = 0.f;
    if constexpr (!RMS) {
        float sum = 0.f;
#pragma unroll 4
        for (int c = W * g.tid; c < cols; c += W * g.size) {
            load_chunk<W>(xr + c, v);
#pragma unroll
            for (int j = 0; j < W; ++j) sum += v[j];
        }
        mean = g.sum(sum) / cols;
    }
    float squares = 0.f;
#pragma unroll 4
    for (int c = W * g.tid; c < cols; c += W * g.size) {
        load_chunk<W>(xr + c, v);
#pragma unroll
        for (int j = 0; j < W; ++j) squares += (v[j] - mean) * (v[j] - mean);
    }
    const float rstd = rsqrtf(g.sum(squares) / cols + eps);

#pragma unroll 4
    for (int c = W * g.tid; c < cols; c += W * g.size) {
        float w[W], b[W];
        load_chunk<W>(xr + c, v);
        load_chunk<W>(gamma + c, w);
        if (!RMS && has_beta) load_chunk<W>(beta + c, b);
#pragma unroll
        for (int j = 0; j < W; ++j) {
            v[j] = (v[j] - mean) * rstd * w[j];
            if (!RMS && has_beta) v[j] += b[j];
        }
        store_chunk<W>(yr + c, v);
    }
    if (g.tid == 0) {
        if constexpr (!RMS) mean_out[g.row] = mean;
        rstd_out[g.row] = rstd;
    }
}

// With g = dy * gamma and xhat = (x - mean) * rstd:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))      (RMS: no mean(g) term)
//   dgamma = sum_rows dy * xhat,  dbeta = sum_rows dy.
// ``width`` is the accumulator width per warp: 2*cols (dgamma | dbeta), or cols for RMS.
// use_smem: accumulate in dynamic shared memory (nwarps * width floats) and write one
// partial row per block; otherwise accumulate straight into partial (one row per warp).
// A lane owns the columns of its chunks (W of them from W * lane on, every 32 W): no races.
template <typename T, typename P, bool RMS, bool VEC>
__global__ void norm_backward_kernel(const T* __restrict__ dy, const T* __restrict__ x,
                                     const P* __restrict__ gamma,
                                     const float* __restrict__ mean,
                                     const float* __restrict__ rstd, T* __restrict__ dx,
                                     float* __restrict__ partial, int rows, int cols,
                                     int use_smem) {
    constexpr int W = VEC ? 4 : 1;
    extern __shared__ float smem[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    const int width = RMS ? cols : 2 * cols;
    float* acc = use_smem ? smem + warp * width
                          : partial + ((long long)blockIdx.x * nwarps + warp) * width;
    for (int c = lane; c < width; c += 32) acc[c] = 0.f;
    __syncwarp();  // each lane then updates other columns than it zeroed
    float d[W], xv[W], w[W], out[W];

    for (int row = blockIdx.x * nwarps + warp; row < rows; row += gridDim.x * nwarps) {
        const long long offset = (long long)row * cols;
        const T* xr = x + offset;
        const T* dyr = dy + offset;
        T* dxr = dx + offset;
        const float mu = RMS ? 0.f : mean[row];
        const float rs = rstd[row];

        float sum_g = 0.f, sum_gx = 0.f;
#pragma unroll 4
        for (int c = W * lane; c < cols; c += 32 * W) {
            load_chunk<W>(dyr + c, d);
            load_chunk<W>(xr + c, xv);
            load_chunk<W>(gamma + c, w);
#pragma unroll
            for (int j = 0; j < W; ++j) {
                const float xhat = (xv[j] - mu) * rs;
                const float gv = d[j] * w[j];
                sum_g += gv;
                sum_gx += gv * xhat;
                acc[c + j] += d[j] * xhat;
                if constexpr (!RMS) acc[cols + c + j] += d[j];
            }
        }
        const float mean_g = RMS ? 0.f : warp_sum(sum_g) / cols;
        const float mean_gx = warp_sum(sum_gx) / cols;

#pragma unroll 4
        for (int c = W * lane; c < cols; c += 32 * W) {
            load_chunk<W>(dyr + c, d);
            load_chunk<W>(xr + c, xv);
            load_chunk<W>(gamma + c, w);
#pragma unroll
            for (int j = 0; j < W; ++j) {
                const float xhat = (xv[j] - mu) * rs;
                out[j] = rs * (d[j] * w[j] - mean_g - xhat * mean_gx);
            }
            store_chunk<W>(dxr + c, out);
        }
    }

    if (use_smem) {  // fold this block's warps into one partial row
        __syncthreads();
        for (int c = threadIdx.x; c < width; c += blockDim.x) {
            float v = 0.f;
            for (int w = 0; w < nwarps; ++w) v += smem[w * width + c];
            partial[(long long)blockIdx.x * width + c] = v;
        }
    }
}

// dgamma[c] = sum_p partial[p, c]; dbeta[c] = sum_p partial[p, cols + c]. One thread per column,
// consecutive threads on consecutive columns (coalesced), a fixed summation order.
template <typename P, bool RMS>
__global__ void norm_reduce_kernel(const float* __restrict__ partial, int n_parts, int cols,
                                   P* __restrict__ dgamma, P* __restrict__ dbeta) {
    const int width = RMS ? cols : 2 * cols;
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= width) return;
    float v = 0.f;
    for (int p = 0; p < n_parts; ++p) v += partial[(long long)p * width + c];
    if (c < cols) dgamma[c] = from_float<P>(v);
    else dbeta[c - cols] = from_float<P>(v);
}
