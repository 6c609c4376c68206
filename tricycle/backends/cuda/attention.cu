// attention.cu: causal multi-head attention, flash-attention style (Dao et al. 2022).
//
// Reference: tricycle/attention.py attention_forward / attention_backward.
// Input qkv (B, T, 3E) packs q | k | v along the last axis, each split into H heads of D
// dims: q[b, t, h, d] = qkv[b, t, h*D + d], k at E + h*D + d, v at 2E + h*D + d. Output out
// (B, T, E) with heads merged. Scores are scaled by 1/sqrt(D) and causally masked.
//
// No (B, H, T, T) matrix ever exists. The forward walks the keys in tiles of ATT_BC held in
// shared memory, keeping a running max and sum per query row (online softmax), and saves only
// out and one log-sum-exp per row. The backward recomputes the probabilities from that lse:
//     P = exp(S - lse),  dV = P^T dO,  dP = dO V^T,  dS = P * (dP - Delta),
//     dQ = dS K / sqrt(D),  dK = dS^T Q / sqrt(D),  with Delta = rowsum(dO * O).
// It runs as two kernels, so that every output element has exactly one writer (no atomics,
// deterministic): one over query tiles for dQ (and Delta), one over key tiles for dK and dV.
//
// Thread layout (all kernels): 128 threads per block; each row (a query row, or a key row in
// the dK/dV kernel) belongs to P = D/32 consecutive threads, each owning 32 of the row's D
// values as 8 float4 chunks, interleaved (thread ``sub`` owns chunks sub, sub+P, ...) so the
// P threads of a row read different shared-memory banks. Dot products over D are per-thread
// partial sums finished with P-1 xor-shuffles. Scores use base 2 (exp2f), with log2(e) folded
// into the scale; the saved lse is in the same base-2 units. Arithmetic is float32 for every
// storage type T (float, half_t, bf16_t): tiles are widened to float32 as they are loaded.
// This is the CUDA-core version (FFMA); it needs D in {32, 64, 128}.
//
// Dropout of the probabilities (threshold > 0): O = (P * M) V with M = keep / (1 - p), and in
// the backward dV = (P * M)^T dO, dS = P * (M * dP - Delta) (Delta = rowsum(dO * O) still). The
// mask is never stored: keep(b*H + h, query, key) is a hash of the seed and the coordinates,
// the same function as tricycle/dropout_mask.py keep_mask (``dropout_keep`` in common.cuh), so
// every kernel (and numpy) recomputes the same mask.

#define ATT_THREADS 128
#define ATT_BC 32  // rows per shared-memory tile (keys in the forward and dQ, queries in dK/dV)

__device__ __forceinline__ float dot_chunk(const float* a, const float4 b) {
    return a[0] * b.x + a[1] * b.y + a[2] * b.z + a[3] * b.w;
}
__device__ __forceinline__ void axpy_chunk(float* y, float alpha, const float4 x) {
    y[0] += alpha * x.x;
    y[1] += alpha * x.y;
    y[2] += alpha * x.z;
    y[3] += alpha * x.w;
}
// Finish a dot product split over the P threads of a row (all 32 lanes must call this).
template <int P>
__device__ __forceinline__ float row_sum(float v) {
#pragma unroll
    for (int offset = 1; offset < P; offset <<= 1) v += __shfl_xor_sync(TC_FULL_MASK, v, offset);
    return v;
}

// Load rows [row0, row0 + ATT_BC) of one head of q, k or v (``base`` points at element
// (b, 0, part*E + h*D)) into a float32 shared tile; rows past the sequence are zero.
template <typename T, int D>
__device__ __forceinline__ void load_tile(float4 (*tile)[D / 4], const T* base, int row0,
                                          int seq_len, int stride) {
    constexpr int C4 = D / 4;
    for (int i = threadIdx.x; i < ATT_BC * C4; i += ATT_THREADS) {
        const int j = i / C4, c = i % C4, row = row0 + j;
        tile[j][c] = row < seq_len ? load4(base + (long long)row * stride + 4 * c)
                                   : make_float4(0.f, 0.f, 0.f, 0.f);
    }
}

// Load this thread's 32 values of one row (8 interleaved float4 chunks), times ``scale``.
template <typename T, int P>
__device__ __forceinline__ void load_row(float* dst, const T* row, int sub, bool valid,
                                         float scale) {
#pragma unroll
    for (int k = 0; k < 8; ++k) {
        const float4 v = valid ? load4(row + 4 * (sub + P * k)) : make_float4(0.f, 0.f, 0.f, 0.f);
        dst[4 * k] = v.x * scale;
        dst[4 * k + 1] = v.y * scale;
        dst[4 * k + 2] = v.z * scale;
        dst[4 * k + 3] = v.w * scale;
    }
}

template <typename T, int P>
__device__ __forceinline__ void store_row(T* row, const float* src, int sub, float scale) {
#pragma unroll
    for (int k = 0; k < 8; ++k)
        store4(row + 4 * (sub + P * k), src[4 * k] * scale, src[4 * k + 1] * scale,
               src[4 * k + 2] * scale, src[4 * k + 3] * scale);
}

// ------------------------------------------------------------------ forward
// grid: (ceil(T / BR), B * H); block: 128 threads = BR query rows of P threads.
// lse (B, H, T): log2-sum-exp2 of each row's scaled scores.
template <typename T, int D>
__global__ void __launch_bounds__(ATT_THREADS)
    attention_forward_kernel(const T* __restrict__ qkv, T* __restrict__ out,
                             float* __restrict__ lse, int seq_len, int n_heads,
                             float scale_log2,
                             const unsigned int* __restrict__ seed_ptr, unsigned int threshold,
                             float keep_scale) {
    const unsigned int seed = *seed_ptr;  // in device memory: a CUDA graph's replays change it
    constexpr int P = D / 32, BR = ATT_THREADS / P, C4 = D / 4;
    __shared__ float4 k_tile[ATT_BC][C4];
    __shared__ float4 v_tile[ATT_BC][C4];

    const int E = n_heads * D, stride = 3 * E;
    const int bh = blockIdx.y, b = bh / n_heads, h = bh % n_heads;
    const int q_tile = gridDim.x - 1 - blockIdx.x;  // the longest (last) query tiles start first
    const int sub = threadIdx.x % P;
    const int qi = q_tile * BR + threadIdx.x / P;
    const bool valid = qi < seq_len;
    const T* base = qkv + (long long)b * seq_len * stride + h * D;  // q of token 0, head h

    float q[32], o[32];
    load_row<T, P>(q, base + (long long)qi * stride, sub, valid, scale_log2);
#pragma unroll
    for (int i = 0; i < 32; ++i) o[i] = 0.f;
    float m = -TC_INF, l = 0.f;
    const unsigned int row_key = dropout_row_key(seed, (unsigned int)bh * seq_len + qi);

    const int last_query = min(q_tile * BR + BR, seq_len) - 1;
    const int n_tiles = last_query / ATT_BC + 1;  // causal: keys 0 .. last_query only
    for (int tile = 0; tile < n_tiles; ++tile) {
        const int key0 = tile * ATT_BC;
        __syncthreads();  // everyone is done with the previous tile
        load_tile<T, D>(k_tile, base + E, key0, seq_len, stride);
        load_tile<T, D>(v_tile, base + 2 * E, key0, seq_len, stride);
        __syncthreads();

        float s[ATT_BC];
        float tile_max = -TC_INF;
#pragma unroll
        for (int j = 0; j < ATT_BC; ++j) {
            float acc = 0.f;
#pragma unroll
            for (int k = 0; k < 8; ++k) acc += dot_chunk(q + 4 * k, k_tile[j][sub + P * k]);
            acc = row_sum<P>(acc);
            s[j] = key0 + j <= qi ? acc : -TC_INF;
            tile_max = fmaxf(tile_max, s[j]);
        }
        // key 0 is in every row's first tile, so m_new is finite and never -inf - -inf
        const float m_new = fmaxf(m, tile_max);
        const float alpha = exp2f(m - m_new);  // 0 on the first tile
        l *= alpha;
#pragma unroll
        for (int i = 0; i < 32; ++i) o[i] *= alpha;
#pragma unroll
        for (int j = 0; j < ATT_BC; ++j) {
            const float p = exp2f(s[j] - m_new);
            l += p;  // the normaliser counts every probability; the output only the kept
            const float pm = p * dropout_keep(row_key, key0 + j, threshold, keep_scale);
#pragma unroll
            for (int k = 0; k < 8; ++k) axpy_chunk(o + 4 * k, pm, v_tile[j][sub + P * k]);
        }
        m = m_new;
    }

    if (valid) {
        const int E_out = E;
        store_row<T, P>(out + ((long long)b * seq_len + qi) * E_out + h * D, o, sub, 1.f / l);
        if (sub == 0) lse[(long long)bh * seq_len + qi] = m + log2f(l);
    }
}

// ------------------------------------------------------------------ backward: dQ and Delta
// Same grid as the forward. Each query row: Delta = rowsum(dO * O) (written for the dK/dV
// kernel), then over the key tiles: p = exp2(s - lse), dp = dO . v, ds = p (dp - Delta),
// dq += ds k. dq is scaled by 1/sqrt(D) at the end and written into dqkv's q part.
template <typename T, int D>
__global__ void __launch_bounds__(ATT_THREADS)
    attention_backward_dq_kernel(const T* __restrict__ qkv, const T* __restrict__ out,
                                 const T* __restrict__ dout, const float* __restrict__ lse,
                                 float* __restrict__ delta, T* __restrict__ dqkv, int seq_len,
                                 int n_heads, float scale_log2, float scale,
                                 const unsigned int* __restrict__ seed_ptr,
                                 unsigned int threshold, float keep_scale) {
    const unsigned int seed = *seed_ptr;  // in device memory: a CUDA graph's replays change it
    constexpr int P = D / 32, BR = ATT_THREADS / P, C4 = D / 4;
    __shared__ float4 k_tile[ATT_BC][C4];
    __shared__ float4 v_tile[ATT_BC][C4];

    const int E = n_heads * D, stride = 3 * E;
    const int bh = blockIdx.y, b = bh / n_heads, h = bh % n_heads;
    const int q_tile = gridDim.x - 1 - blockIdx.x;
    const int sub = threadIdx.x % P;
    const int qi = q_tile * BR + threadIdx.x / P;
    const bool valid = qi < seq_len;
    const T* base = qkv + (long long)b * seq_len * stride + h * D;
    const long long row_out = ((long long)b * seq_len + qi) * E + h * D;  // in out and dout

    float q[32], dov[32], dq[32];
    load_row<T, P>(q, base + (long long)qi * stride, sub, valid, scale_log2);
    load_row<T, P>(dov, dout + row_out, sub, valid, 1.f);
    float d_row = 0.f;  // Delta = rowsum(dO * O), O read once and not kept
#pragma unroll
    for (int k = 0; k < 8; ++k) {
        const float4 ov = valid ? load4(out + row_out + 4 * (sub + P * k))
                                : make_float4(0.f, 0.f, 0.f, 0.f);
        d_row += dot_chunk(dov + 4 * k, ov);
    }
    d_row = row_sum<P>(d_row);
    const long long stat = (long long)bh * seq_len + qi;
    const float lse_row = valid ? lse[stat] : 0.f;
    if (valid && sub == 0) delta[stat] = d_row;
    const unsigned int row_key = dropout_row_key(seed, (unsigned int)stat);
#pragma unroll
    for (int i = 0; i < 32; ++i) dq[i] = 0.f;

    const int last_query = min(q_tile * BR + BR, seq_len) - 1;
    const int n_tiles = last_query / ATT_BC + 1;
    for (int tile = 0; tile < n_tiles; ++tile) {
        const int key0 = tile * ATT_BC;
        __syncthreads();
        load_tile<T, D>(k_tile, base + E, key0, seq_len, stride);
        load_tile<T, D>(v_tile, base + 2 * E, key0, seq_len, stride);
        __syncthreads();
#pragma unroll 4
        for (int j = 0; j < ATT_BC; ++j) {
            float s = 0.f, dp = 0.f;
#pragma unroll
            for (int k = 0; k < 8; ++k) {
                s += dot_chunk(q + 4 * k, k_tile[j][sub + P * k]);
                dp += dot_chunk(dov + 4 * k, v_tile[j][sub + P * k]);
            }
            s = row_sum<P>(s);
            dp = row_sum<P>(dp);
            const float p = key0 + j <= qi ? exp2f(s - lse_row) : 0.f;
            const float keep = dropout_keep(row_key, key0 + j, threshold, keep_scale);
            const float ds = p * (dp * keep - d_row);
#pragma unroll
            for (int k = 0; k < 8; ++k) axpy_chunk(dq + 4 * k, ds, k_tile[j][sub + P * k]);
        }
    }
    if (valid) store_row<T, P>(dqkv + (long long)b * seq_len * stride + (long long)qi * stride + h * D,
                               dq, sub, scale);
}

// ------------------------------------------------------------------ backward: dK and dV
// grid: (ceil(T / BR), B * H); each block owns BR key rows and walks the query tiles that can
// see them (queries >= its first key). Per key row and query i:
//     p = exp2(s - lse_i) (0 where i < key), dv += p dO_i, dp = dO_i . v,
//     ds = p (dp - Delta_i), dk += ds q_i.
template <typename T, int D>
__global__ void __launch_bounds__(ATT_THREADS)
    attention_backward_dkv_kernel(const T* __restrict__ qkv, const T* __restrict__ dout,
                                  const float* __restrict__ lse, const float* __restrict__ delta,
                                  T* __restrict__ dqkv, int seq_len, int n_heads,
                                  float scale_log2, float scale,
                                  const unsigned int* __restrict__ seed_ptr,
                                  unsigned int threshold, float keep_scale) {
    constexpr int P = D / 32, BR = ATT_THREADS / P, C4 = D / 4;
    __shared__ float4 q_tile[ATT_BC][C4];
    __shared__ float4 do_tile[ATT_BC][C4];
    __shared__ float lse_tile[ATT_BC];
    __shared__ float delta_tile[ATT_BC];
    __shared__ unsigned int row_key_tile[ATT_BC];  // dropout_row_key of each query

    const int E = n_heads * D, stride = 3 * E;
    const int bh = blockIdx.y, b = bh / n_heads, h = bh % n_heads;
    const int first_key = blockIdx.x * BR;  // low key tiles see the most queries: start them first
    const int sub = threadIdx.x % P;
    const int kj = first_key + threadIdx.x / P;
    const bool valid = kj < seq_len;
    const T* base = qkv + (long long)b * seq_len * stride + h * D;
    const T* dout_base = dout + (long long)b * seq_len * E + h * D;
    const long long stat0 = (long long)bh * seq_len;

    float k[32], v[32], dk[32], dv[32];
    load_row<T, P>(k, base + E + (long long)kj * stride, sub, valid, scale_log2);
    load_row<T, P>(v, base + 2 * E + (long long)kj * stride, sub, valid, 1.f);
#pragma unroll
    for (int i = 0; i < 32; ++i) dk[i] = dv[i] = 0.f;

    const int n_query_tiles = (seq_len + ATT_BC - 1) / ATT_BC;
    for (int tile = first_key / ATT_BC; tile < n_query_tiles; ++tile) {
        const int query0 = tile * ATT_BC;
        __syncthreads();
        load_tile<T, D>(q_tile, base, query0, seq_len, stride);
        load_tile<T, D>(do_tile, dout_base, query0, seq_len, E);
        if (threadIdx.x < ATT_BC) {
            const int qi = query0 + threadIdx.x;
            lse_tile[threadIdx.x] = qi < seq_len ? lse[stat0 + qi] : 0.f;
            delta_tile[threadIdx.x] = qi < seq_len ? delta[stat0 + qi] : 0.f;
            // the seed read where it is used: one register less across the loop (at 255)
            row_key_tile[threadIdx.x] = dropout_row_key(*seed_ptr, (unsigned int)(stat0 + qi));
        }
        __syncthreads();
#pragma unroll 2  // 4 would push past 255 registers and spill
        for (int i = 0; i < ATT_BC; ++i) {
            const int qi = query0 + i;
            float s = 0.f, dp = 0.f;
#pragma unroll
            for (int c = 0; c < 8; ++c) {
                s += dot_chunk(k + 4 * c, q_tile[i][sub + P * c]);
                dp += dot_chunk(v + 4 * c, do_tile[i][sub + P * c]);
            }
            s = row_sum<P>(s);
            dp = row_sum<P>(dp);
            const float p = (qi >= kj && qi < seq_len) ? exp2f(s - lse_tile[i]) : 0.f;
            const float keep = dropout_keep(row_key_tile[i], kj, threshold, keep_scale);
            const float ds = p * (dp * keep - delta_tile[i]);
            const float pm = p * keep;
#pragma unroll
            for (int c = 0; c < 8; ++c) {
                axpy_chunk(dv + 4 * c, pm, do_tile[i][sub + P * c]);
                axpy_chunk(dk + 4 * c, ds, q_tile[i][sub + P * c]);
            }
        }
    }
    if (valid) {
        T* row = dqkv + (long long)b * seq_len * stride + (long long)kj * stride + h * D;
        store_row<T, P>(row + E, dk, sub, scale);
        store_row<T, P>(row + 2 * E, dv, sub, 1.f);
    }
}
