// sdpa.cu: scaled dot-product attention in general, flash-attention style (Dao et al. 2022).
//
// Reference: tricycle/nn/sdpa.py sdpa_forward / sdpa_backward. Queries q (B, H, Tq, D), keys
// k (B, Hkv, Tk, D), values v (B, Hkv, Tk, Dv); query head h reads key/value head h / G with
// G = H / Hkv (grouped-query attention). Each of q, k, v may be any strided view whose last
// axis is contiguous: its (B, H, T) strides come as arguments. The scores
//     S = q k^T * scale + bias,   hidden keys at -inf
// take an optional additive bias broadcast to (B, H, Tq, Tk) through four strides (0 on a
// broadcast axis: a key padding mask (B, 1, 1, Tk) is read in place) and hide keys by
// position: query i sits at position p = i + Tk - Tq; ``causal`` hides keys j > p and
// ``window`` (0: none) keys with |p - j| >= window. A row that sees no key has output 0 and
// log-sum-exp +inf (so that its recomputed probabilities are 0 in the backward).
//
// No (Tq, Tk) matrix ever exists. The forward walks the keys a block of queries may see in
// tiles of BC rows held in shared memory, with an online softmax (a running max m and sum l
// per query row), and saves the output (B, H, Tq, Dv) and the natural log-sum-exp of each row
// (B, H, Tq) in float32. The backward recomputes P = exp(S - lse):
//     dV = (P * M)^T dO,  dP = dO V^T,  dS = P * (M * dP - Delta),  Delta = rowsum(dO * O),
//     dQ = dS K * scale,  dK = dS^T Q * scale,
// as two kernels so that every output element has exactly one writer (no atomics, the same
// result at every run): one over query tiles for dQ (writing Delta), one over key tiles for
// dK and dV, whose rows add the contributions of every query head of their group.
//
// Thread layout (all kernels): 128 threads per block. Head dims are padded to DP (8 ... 256,
// zeros beyond D or Dv); each row (a query row, or a key row in the dK/dV kernel) belongs to
// P = DP / V consecutive threads that own V = min(DP, 32) of its values each, in chunks of
// four interleaved (thread ``sub`` owns chunks sub, sub + P, ...) so that the P threads of a
// row read consecutive float4s of a shared tile row (one 16-byte load per four products). Dot products over the head dim are per-thread partial sums finished
// with P - 1 xor-shuffles. Scores are in base 2 (exp2f), log2(e) folded into the scale and the
// bias. Arithmetic is float32 for every storage type T (float, half_t, bf16_t).
//
// Dropout of the probabilities (threshold > 0): O = (P * M) V with M = keep / (1 - p), the
// mask of tricycle/dropout_mask.py (``dropout_keep`` in common.cuh) for row (b H + h) Tq + i
// and key j, recomputed wherever it is needed.

#define SDPA_THREADS 128
#define SDPA_LOG2E 1.4426950408889634f
#define SDPA_LN2 0.6931471805599453f

// The tile shapes of a padded head dim DP.
template <int DP>
struct SdpaShape {
    static constexpr int V = DP < 32 ? DP : 32;      // values of a row per thread
    static constexpr int P = DP / V;                 // threads per row
    static constexpr int BR = SDPA_THREADS / P;      // rows a block owns
    static constexpr int BC = DP <= 128 ? 32 : 16;  // rows of a streamed shared-memory tile
};

// Which keys a query sees by position: query i at position i + offset, offset = Tk - Tq.
struct Positions {
    int offset, causal, window;  // window 0: no window

    __device__ __forceinline__ bool sees(int i, int j) const {
        const int p = i + offset;
        return (!causal || j <= p) && (window == 0 || (p - j < window && j - p < window));
    }
    // [first, end) of the keys that any query in [ia, ib] may see (then end >= first)
    __device__ __forceinline__ void keys_of(int ia, int ib, int n_keys, int& first,
                                            int& end) const {
        const int pa = ia + offset, pb = ib + offset;
        first = 0;
        end = n_keys;
        if (window) {
            first = max(first, pa - window + 1);
            if (!causal) end = min(end, pb + window);
        }
        if (causal) end = min(end, pb + 1);
        end = max(end, first);
    }
    // [first, end) of the queries that may see any key in [ja, jb]
    __device__ __forceinline__ void queries_of(int ja, int jb, int n_queries, int& first,
                                               int& end) const {
        first = 0;
        end = n_queries;
        if (causal) first = max(first, ja - offset);
        if (window) {
            first = max(first, ja - window + 1 - offset);
            end = min(end, jb + window - offset);
        }
        end = max(end, first);
    }
};

// Finish a dot product split over the P threads of a row (every lane of the warp calls it).
template <int P>
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
    for (int offset = 1; offset < P; offset <<= 1) v += __shfl_xor_sync(TC_FULL_MASK, v, offset);
    return v;
}

// Thread ``sub`` of a row owns its values in chunks of four, interleaved: value i of the thread
// is dim 4 (sub + P (i / 4)) + i % 4, so that the P threads of a row read consecutive float4s.
template <int P>
__device__ __forceinline__ int dim_of(int sub, int i) {
    return 4 * (sub + P * (i / 4)) + i % 4;
}

// This thread's V values of a row times ``scale``; zeros past n or if !valid.
template <typename T, int V, int P>
__device__ __forceinline__ void load_values(float (&dst)[V], const T* row, int n, int sub,
                                            bool valid, float scale) {
#pragma unroll
    for (int i = 0; i < V; ++i) {
        const int d = dim_of<P>(sub, i);
        dst[i] = valid && d < n ? to_float(row[d]) * scale : 0.f;
    }
}

template <typename T, int V, int P>
__device__ __forceinline__ void store_values(T* row, const float (&src)[V], int n, int sub,
                                             float scale) {
#pragma unroll
    for (int i = 0; i < V; ++i) {
        const int d = dim_of<P>(sub, i);
        if (d < n) row[d] = from_float<T>(src[i] * scale);
    }
}

// Rows [first, first + BC) of a (rows, n) matrix with row stride ``stride`` into a float32
// shared tile (BC, DP): zeros past ``limit`` rows and past n columns. Element by element, so
// any n and stride will do; consecutive threads read consecutive elements of a row.
template <typename T, int DP, int BC>
__device__ __forceinline__ void load_tile(float (*tile)[DP], const T* base, long long stride,
                                          int first, int limit, int n) {
    for (int e = threadIdx.x; e < BC * DP; e += SDPA_THREADS) {
        const int r = e / DP, d = e % DP, row = first + r;
        tile[r][d] = row < limit && d < n ? to_float(base[(long long)row * stride + d]) : 0.f;
    }
}

// a . tile_row over this thread's values, summed over the row's P threads
template <int V, int P>
__device__ __forceinline__ float dot_row(const float (&a)[V], const float* tile_row, int sub) {
    const float4* chunks = reinterpret_cast<const float4*>(tile_row);
    float acc = 0.f;
#pragma unroll
    for (int c = 0; c < V / 4; ++c) {
        const float4 x = chunks[sub + P * c];
        acc += a[4 * c] * x.x + a[4 * c + 1] * x.y + a[4 * c + 2] * x.z + a[4 * c + 3] * x.w;
    }
    return group_sum<P>(acc);
}

// y += alpha * tile_row over this thread's values
template <int V, int P>
__device__ __forceinline__ void axpy_row(float (&y)[V], float alpha, const float* tile_row,
                                         int sub) {
    const float4* chunks = reinterpret_cast<const float4*>(tile_row);
#pragma unroll
    for (int c = 0; c < V / 4; ++c) {
        const float4 x = chunks[sub + P * c];
        y[4 * c] += alpha * x.x;
        y[4 * c + 1] += alpha * x.y;
        y[4 * c + 2] += alpha * x.z;
        y[4 * c + 3] += alpha * x.w;
    }
}

// ------------------------------------------------------------------ forward
// grid (B * H, ceil(Tq / BR)): a block owns BR query rows of one (batch, head).
template <typename T, int DP>
__global__ void __launch_bounds__(SDPA_THREADS, 2)
    sdpa_forward_kernel(const T* __restrict__ q, const T* __restrict__ k,
                        const T* __restrict__ v, const T* __restrict__ bias,
                        T* __restrict__ out, float* __restrict__ lse, long long q_b,
                        long long q_h, long long q_t, long long k_b, long long k_h,
                        long long k_t, long long v_b, long long v_h, long long v_t,
                        long long bias_b, long long bias_h, long long bias_q, long long bias_k,
                        int n_heads, int n_kv_heads, int Tq, int Tk, int D, int Dv,
                        float scale_log2, int causal, int window, int has_bias,
                        const unsigned int* __restrict__ seed_ptr, unsigned int threshold,
                        float keep_scale) {
    using S = SdpaShape<DP>;
    constexpr int V = S::V, P = S::P, BR = S::BR, BC = S::BC;
    __shared__ __align__(16) float k_tile[BC][DP];
    __shared__ __align__(16) float v_tile[BC][DP];

    const int bh = blockIdx.x, b = bh / n_heads, h = bh % n_heads;
    const int kv = h / (n_heads / n_kv_heads);
    const int first_query = blockIdx.y * BR;
    const int sub = threadIdx.x % P, qi = first_query + threadIdx.x / P;
    const bool valid = qi < Tq;
    const Positions positions{Tk - Tq, causal, window};
    const T* k_base = k + b * k_b + kv * k_h;
    const T* v_base = v + b * v_b + kv * v_h;
    const T* bias_row = bias + b * bias_b + h * bias_h + (long long)qi * bias_q;
    const long long stat = (long long)bh * Tq + qi;
    const unsigned int row_key = dropout_row_key(*seed_ptr, (unsigned int)stat);

    float qr[V], o[V];
    load_values<T, V, P>(qr, q + b * q_b + h * q_h + (long long)qi * q_t, D, sub, valid,
                         scale_log2);
#pragma unroll
    for (int c = 0; c < V; ++c) o[c] = 0.f;
    float m = -TC_INF, l = 0.f;  // the row's running max and sum of exp2(s - m)

    int first_key, end_key;
    positions.keys_of(first_query, min(first_query + BR, Tq) - 1, Tk, first_key, end_key);
    for (int key0 = first_key; key0 < end_key; key0 += BC) {
        __syncthreads();  // everyone is done with the previous tile
        load_tile<T, DP, BC>(k_tile, k_base, k_t, key0, end_key, D);
        load_tile<T, DP, BC>(v_tile, v_base, v_t, key0, end_key, Dv);
        __syncthreads();

        float s[BC];
        float tile_max = -TC_INF;
#pragma unroll
        for (int j = 0; j < BC; ++j) {
            float acc = dot_row<V, P>(qr, k_tile[j], sub);
            const int key = key0 + j;
            if (valid && key < end_key && positions.sees(qi, key)) {
                if (has_bias) acc += SDPA_LOG2E * to_float(bias_row[key * bias_k]);
            } else {
                acc = -TC_INF;
            }
            s[j] = acc;
            tile_max = fmaxf(tile_max, acc);
        }
        const float m_new = fmaxf(m, tile_max);
        const float shift = m_new == -TC_INF ? 0.f : m_new;  // nothing seen yet: no -inf - -inf
        const float alpha = exp2f(m - shift);  // 0 until the first seen key
        l *= alpha;
#pragma unroll
        for (int c = 0; c < V; ++c) o[c] *= alpha;
#pragma unroll
        for (int j = 0; j < BC; ++j) {
            const float p = exp2f(s[j] - shift);  // hidden keys: exp2(-inf) = 0
            l += p;  // the normaliser counts every probability; the output only the kept
            axpy_row<V, P>(o, p * dropout_keep(row_key, key0 + j, threshold, keep_scale),
                           v_tile[j], sub);
        }
        m = m_new;
    }

    if (valid) {
        store_values<T, V, P>(out + stat * Dv, o, Dv, sub, l > 0.f ? 1.f / l : 0.f);
        if (sub == 0) lse[stat] = l > 0.f ? (m + log2f(l)) * SDPA_LN2 : TC_INF;
    }
}

// ------------------------------------------------------------------ backward: dQ and Delta
// The forward's grid. Each query row: Delta = rowsum(dO * O) (written for the dK/dV kernel),
// then over the key tiles it may see: p = exp2(s - lse), dp = dO . v,
// ds = p (dp M - Delta), dq += ds k; dq is scaled at the end. out and dout are contiguous
// (B, H, Tq, Dv); dq is written contiguous (B, H, Tq, D).
template <typename T, int DP>
__global__ void __launch_bounds__(SDPA_THREADS)
    sdpa_backward_dq_kernel(const T* __restrict__ q, const T* __restrict__ k,
                            const T* __restrict__ v, const T* __restrict__ bias,
                            const T* __restrict__ out, const T* __restrict__ dout,
                            const float* __restrict__ lse, float* __restrict__ delta,
                            T* __restrict__ dq, long long q_b, long long q_h, long long q_t,
                            long long k_b, long long k_h, long long k_t, long long v_b,
                            long long v_h, long long v_t, long long bias_b, long long bias_h,
                            long long bias_q, long long bias_k, int n_heads, int n_kv_heads,
                            int Tq, int Tk, int D, int Dv, float scale_log2, float scale,
                            int causal, int window, int has_bias,
                            const unsigned int* __restrict__ seed_ptr, unsigned int threshold,
                            float keep_scale) {
    using S = SdpaShape<DP>;
    constexpr int V = S::V, P = S::P, BR = S::BR, BC = S::BC;
    __shared__ __align__(16) float k_tile[BC][DP];
    __shared__ __align__(16) float v_tile[BC][DP];

    const int bh = blockIdx.x, b = bh / n_heads, h = bh % n_heads;
    const int kv = h / (n_heads / n_kv_heads);
    const int first_query = blockIdx.y * BR;
    const int sub = threadIdx.x % P, qi = first_query + threadIdx.x / P;
    const bool valid = qi < Tq;
    const Positions positions{Tk - Tq, causal, window};
    const T* k_base = k + b * k_b + kv * k_h;
    const T* v_base = v + b * v_b + kv * v_h;
    const T* bias_row = bias + b * bias_b + h * bias_h + (long long)qi * bias_q;
    const long long stat = (long long)bh * Tq + qi;
    const unsigned int row_key = dropout_row_key(*seed_ptr, (unsigned int)stat);

    float qr[V], dor[V], dqr[V];
    load_values<T, V, P>(qr, q + b * q_b + h * q_h + (long long)qi * q_t, D, sub, valid,
                         scale_log2);
    load_values<T, V, P>(dor, dout + stat * Dv, Dv, sub, valid, 1.f);
    float d_row = 0.f;  // Delta = rowsum(dO * O); O read once and not kept
#pragma unroll
    for (int c = 0; c < V; ++c) {
        const int d = dim_of<P>(sub, c);
        dqr[c] = 0.f;
        if (valid && d < Dv) d_row += dor[c] * to_float(out[stat * Dv + d]);
    }
    d_row = group_sum<P>(d_row);
    if (valid && sub == 0) delta[stat] = d_row;
    const float lse_row = valid ? lse[stat] * SDPA_LOG2E : 0.f;  // base 2; +inf stays +inf

    int first_key, end_key;
    positions.keys_of(first_query, min(first_query + BR, Tq) - 1, Tk, first_key, end_key);
    for (int key0 = first_key; key0 < end_key; key0 += BC) {
        __syncthreads();
        load_tile<T, DP, BC>(k_tile, k_base, k_t, key0, end_key, D);
        load_tile<T, DP, BC>(v_tile, v_base, v_t, key0, end_key, Dv);
        __syncthreads();
#pragma unroll 4
        for (int j = 0; j < BC; ++j) {
            float s = dot_row<V, P>(qr, k_tile[j], sub);
            const float dp = dot_row<V, P>(dor, v_tile[j], sub);
            const int key = key0 + j;
            float p = 0.f;
            if (valid && key < end_key && positions.sees(qi, key)) {
                if (has_bias) s += SDPA_LOG2E * to_float(bias_row[key * bias_k]);
                p = exp2f(s - lse_row);  // 0 where the bias hides the key or lse is +inf
            }
            const float keep = dropout_keep(row_key, key, threshold, keep_scale);
            axpy_row<V, P>(dqr, p * (dp * keep - d_row), k_tile[j], sub);
        }
    }
    if (valid) store_values<T, V, P>(dq + stat * D, dqr, D, sub, scale);
}

// ------------------------------------------------------------------ backward: dK and dV
// grid (B * Hkv, ceil(Tk / BR)): a block owns BR key rows of one (batch, key/value head) and
// walks, for each query head of the group, the query tiles that may see them. Per key row j
// and query i: p = exp2(s - lse_i), dv += p M dO_i, dp = dO_i . v_j, ds = p (dp M - Delta_i),
// dk += ds q_i. dk and dv are written contiguous (B, Hkv, Tk, D) and (B, Hkv, Tk, Dv).
template <typename T, int DP>
__global__ void __launch_bounds__(SDPA_THREADS)
    sdpa_backward_dkv_kernel(const T* __restrict__ q, const T* __restrict__ k,
                             const T* __restrict__ v, const T* __restrict__ bias,
                             const T* __restrict__ dout, const float* __restrict__ lse,
                             const float* __restrict__ delta, T* __restrict__ dk,
                             T* __restrict__ dv, long long q_b, long long q_h, long long q_t,
                             long long k_b, long long k_h, long long k_t, long long v_b,
                             long long v_h, long long v_t, long long bias_b, long long bias_h,
                             long long bias_q, long long bias_k, int n_heads, int n_kv_heads,
                             int Tq, int Tk, int D, int Dv, float scale_log2, float scale,
                             int causal, int window, int has_bias,
                             const unsigned int* __restrict__ seed_ptr, unsigned int threshold,
                             float keep_scale) {
    using S = SdpaShape<DP>;
    constexpr int V = S::V, P = S::P, BR = S::BR, BC = S::BC;
    __shared__ __align__(16) float q_tile[BC][DP];
    __shared__ __align__(16) float do_tile[BC][DP];
    __shared__ float lse_tile[BC];
    __shared__ float delta_tile[BC];
    __shared__ unsigned int row_key_tile[BC];  // dropout_row_key of each query

    const int bkv = blockIdx.x, b = bkv / n_kv_heads, kv = bkv % n_kv_heads;
    const int group = n_heads / n_kv_heads;
    const int first_key = blockIdx.y * BR;
    const int sub = threadIdx.x % P, kj = first_key + threadIdx.x / P;
    const bool valid = kj < Tk;
    const Positions positions{Tk - Tq, causal, window};
    const long long row = (long long)bkv * Tk + kj;  // in dk and dv

    float kr[V], vr[V], dkr[V], dvr[V];
    load_values<T, V, P>(kr, k + b * k_b + kv * k_h + (long long)kj * k_t, D, sub, valid,
                         scale_log2);
    load_values<T, V, P>(vr, v + b * v_b + kv * v_h + (long long)kj * v_t, Dv, sub, valid, 1.f);
#pragma unroll
    for (int c = 0; c < V; ++c) dkr[c] = dvr[c] = 0.f;

    int first_query, end_query;
    positions.queries_of(first_key, min(first_key + BR, Tk) - 1, Tq, first_query, end_query);
    for (int h = kv * group; h < (kv + 1) * group; ++h) {
        const int bh = b * n_heads + h;
        const long long stat0 = (long long)bh * Tq;
        const T* q_base = q + b * q_b + h * q_h;
        const T* bias_head = bias + b * bias_b + h * bias_h + (long long)kj * bias_k;
        for (int query0 = first_query; query0 < end_query; query0 += BC) {
            __syncthreads();
            load_tile<T, DP, BC>(q_tile, q_base, q_t, query0, end_query, D);
            load_tile<T, DP, BC>(do_tile, dout + stat0 * Dv, Dv, query0, end_query, Dv);
            if (threadIdx.x < BC) {
                const int qi = query0 + threadIdx.x;
                const bool seen = qi < end_query;
                lse_tile[threadIdx.x] = seen ? lse[stat0 + qi] * SDPA_LOG2E : TC_INF;
                delta_tile[threadIdx.x] = seen ? delta[stat0 + qi] : 0.f;
                row_key_tile[threadIdx.x] =
                    dropout_row_key(*seed_ptr, (unsigned int)(stat0 + qi));
            }
            __syncthreads();
#pragma unroll 1
            for (int i = 0; i < BC; ++i) {
                const int qi = query0 + i;
                float s = dot_row<V, P>(kr, q_tile[i], sub);
                const float dp = dot_row<V, P>(vr, do_tile[i], sub);
                float p = 0.f;
                if (valid && qi < end_query && positions.sees(qi, kj)) {
                    if (has_bias) s += SDPA_LOG2E * to_float(bias_head[(long long)qi * bias_q]);
                    p = exp2f(s - lse_tile[i]);
                }
                const float keep = dropout_keep(row_key_tile[i], kj, threshold, keep_scale);
                axpy_row<V, P>(dvr, p * keep, do_tile[i], sub);
                axpy_row<V, P>(dkr, p * (dp * keep - delta_tile[i]), q_tile[i], sub);
            }
        }
    }
    if (valid) {
        store_values<T, V, P>(dk + row * D, dkr, D, sub, scale);
        store_values<T, V, P>(dv + row * Dv, dvr, Dv, sub, 1.f);
    }
}
