// attention_mma.cu: causal multi-head attention on tensor cores, for float16 and bfloat16,
// head dims 64 and 128 (FlashAttention-2, Dao 2023).
//
// Reference: tricycle/attention.py attention_forward / attention_backward; same inputs, outputs
// and saved statistics as attention.cu (the CUDA-core version, which float32 and head dim 32
// keep): qkv (B, T, 3E) packs q | k | v, each of H heads of D dims, row stride 3E; out (B, T, E);
// lse (B, H, T) is the base-2 log-sum-exp of each row's scores times log2(e) / sqrt(D).
//
// Every product is an mma.sync.m16n8k16 with 16-bit operands and float32 accumulators. A block
// is 4 warps; each warp owns 16 rows (queries in the forward and dQ kernels, keys in the dK/dV
// kernel) and streams the other side in tiles through shared memory, loaded by cp.async one
// tile ahead of use (two stages). The softmax runs on the accumulator fragments in registers
// (online: a running max and sum per row), and the probabilities go straight back into the
// next product as its A operand: the accumulator layout of a 16x16 pair of m16n8 tiles is the
// A-operand layout of one m16n8k16 step, so P never touches shared memory.
//
//     forward:  S = Q K^T,  P = exp2(S * scale_log2 - m),  O += (P * M) V,  lse = m + log2(l)
//     dQ:       P from lse,  dP = dO V^T,  dS = P * (M * dP - Delta),  dQ += dS K
//     dK, dV:   S^T = K Q^T,  dV += (P * M)^T dO,  dP^T = V dO^T,  dK += dS^T Q
//
// with Delta = rowsum(dO * O) and M the dropout multiplier (common.cuh; 1 without dropout).
// The backward is two kernels, so every output element has one writer (deterministic, no
// atomics): dQ over query tiles (it also writes Delta), then dK and dV over key tiles.
//
// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k16"), lane = 4 g + t:
//   A (16x16, row-major): a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..)
//   B (16x8, k x n):      b0 (k 2t..2t+1, n g), b1 (k 2t+8.., n g)
//   C (16x8, float):      c0 c1 (g, 2t..2t+1), c2 c3 (g+8, 2t..2t+1)
// Two 16-bit values share a 32-bit register, the lower index in the lower half. ldmatrix.x4
// loads four 8x8 matrices whose row addresses come from lanes 0-7, 8-15, 16-23, 24-31; each
// lane receives row g, columns 2t and 2t+1 of each (with .trans: column g, rows 2t and 2t+1).
// Shared-memory rows are padded by 8 elements (16 bytes), so the 8 rows of an 8x8 matrix fall
// in 8 different 4-bank groups: no bank conflicts for ldmatrix.

#define MMA_THREADS 128  // 4 warps
#define MMA_ROWS 64      // rows of a block: 16 per warp

// ------------------------------------------------------------------ PTX wrappers
__device__ __forceinline__ unsigned int shared_address(const void* p) {
    unsigned int a;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}
// 16 bytes global -> shared, asynchronously; zeros when !valid (nothing is read then)
__device__ __forceinline__ void copy16_async(unsigned int dst, const void* src, bool valid) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src),
                 "r"(valid ? 16 : 0)
                 : "memory");
}
__device__ __forceinline__ void copies_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// wait until at most one committed group is still in flight
__device__ __forceinline__ void copies_wait_one() {
    asm volatile("cp.async.wait_group 1;" ::: "memory");
}
__device__ __forceinline__ void ldmatrix_x4(unsigned int (&r)[4], unsigned int address) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address)
                 : "memory");
}
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned int (&r)[4], unsigned int address) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(address)
                 : "memory");
}
// c += a b for one m16n8k16 step; the storage type picks the instruction
__device__ __forceinline__ void mma(float (&c)[4], const unsigned int (&a)[4], unsigned int b0,
                                    unsigned int b1, bf16_t) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ void mma(float (&c)[4], const unsigned int (&a)[4], unsigned int b0,
                                    unsigned int b1, half_t) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
// two floats rounded into one register of two 16-bit values (lo in the lower half)
__device__ __forceinline__ unsigned int pack2(float lo, float hi, bf16_t) {
    unsigned int r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
__device__ __forceinline__ unsigned int pack2(float lo, float hi, half_t) {
    unsigned int r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}
__device__ __forceinline__ float low_half(unsigned int v, bf16_t) { return bf16_bits_to_float(v & 0xffffu); }
__device__ __forceinline__ float high_half(unsigned int v, bf16_t) { return bf16_bits_to_float(v >> 16); }
__device__ __forceinline__ float low_half(unsigned int v, half_t) { return half_bits_to_float(v & 0xffffu); }
__device__ __forceinline__ float high_half(unsigned int v, half_t) { return half_bits_to_float(v >> 16); }

__device__ __forceinline__ float quad_max(float v) {
    v = fmaxf(v, __shfl_xor_sync(TC_FULL_MASK, v, 1));
    return fmaxf(v, __shfl_xor_sync(TC_FULL_MASK, v, 2));
}
__device__ __forceinline__ float quad_sum(float v) {
    v += __shfl_xor_sync(TC_FULL_MASK, v, 1);
    return v + __shfl_xor_sync(TC_FULL_MASK, v, 2);
}

// ------------------------------------------------------------------ tiles and fragments
// Rows [row0, row0 + ROWS) of one head (``base`` points at row 0 of it, rows ``stride`` apart)
// into a shared tile of row length D + 8, by cp.async; rows past the sequence are zeros.
template <int ROWS, int D, typename T>
__device__ __forceinline__ void load_tile_async(unsigned int tile, const T* base, int row0,
                                                int seq_len, int stride) {
    constexpr int CHUNKS = D / 8;  // 16-byte pieces of a row
    for (int i = threadIdx.x; i < ROWS * CHUNKS; i += MMA_THREADS) {
        const int r = i / CHUNKS, c = i % CHUNKS, row = row0 + r;
        const bool valid = row < seq_len;
        copy16_async(tile + 2 * (r * (D + 8) + 8 * c), base + (long long)(valid ? row : 0) * stride + 8 * c,
                     valid);
    }
}
// Shared addresses of the 8x8 matrices that one ldmatrix.x4 gathers, for this lane, from a tile
// of row length D + 8 (``row0``, ``col0``: the 16x16 block's corner):
// A operand (rows = m, columns = k), and B operand from rows = n, columns = k (non-transposed):
template <int D>
__device__ __forceinline__ unsigned int a_address(unsigned int tile, int row0, int col0) {
    const int lane = threadIdx.x & 31;
    return tile + 2 * ((row0 + (lane & 15)) * (D + 8) + col0 + (lane >> 4) * 8);
}
// -> {b0, b1} of n-tile row0 and {b0, b1} of n-tile row0 + 8, for k = col0 .. col0 + 15
template <int D>
__device__ __forceinline__ unsigned int b_address(unsigned int tile, int row0, int col0) {
    const int lane = threadIdx.x & 31;
    return tile + 2 * ((row0 + (lane & 7) + ((lane >> 4) << 3)) * (D + 8) + col0 + ((lane >> 3) & 1) * 8);
}
// B operand from rows = k, columns = n (ldmatrix .trans): {b0, b1} of n-tile col0 and of
// n-tile col0 + 8, for k = row0 .. row0 + 15
template <int D>
__device__ __forceinline__ unsigned int bt_address(unsigned int tile, int row0, int col0) {
    const int lane = threadIdx.x & 31;
    return tile + 2 * ((row0 + (lane & 7) + ((lane >> 3) & 1) * 8) * (D + 8) + col0 + (lane >> 4) * 8);
}

// acc[N/8] (16 x N) += A (16 x D, fragments in registers) times rows [0, N) of ``tile`` read as
// B = tile^T (the tile holds n-rows of D k-values: keys in S = Q K^T)
template <int D, int N, typename T>
__device__ __forceinline__ void mma_a_bt(float (&acc)[N / 8][4], const unsigned int (&a)[D / 16][4],
                                         unsigned int tile) {
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
        for (int n2 = 0; n2 < N / 16; ++n2) {
            unsigned int b[4];
            ldmatrix_x4(b, b_address<D>(tile, 16 * n2, 16 * kk));
            mma(acc[2 * n2], a[kk], b[0], b[1], T{});
            mma(acc[2 * n2 + 1], a[kk], b[2], b[3], T{});
        }
    }
}
// Same, with A read from shared rows [a_row0, a_row0 + 16) of ``a_tile`` (row length D + 8).
template <int D, int N, typename T>
__device__ __forceinline__ void mma_as_bt(float (&acc)[N / 8][4], unsigned int a_tile, int a_row0,
                                          unsigned int tile) {
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
        unsigned int a[4];
        ldmatrix_x4(a, a_address<D>(a_tile, a_row0, 16 * kk));
#pragma unroll
        for (int n2 = 0; n2 < N / 16; ++n2) {
            unsigned int b[4];
            ldmatrix_x4(b, b_address<D>(tile, 16 * n2, 16 * kk));
            mma(acc[2 * n2], a, b[0], b[1], T{});
            mma(acc[2 * n2 + 1], a, b[2], b[3], T{});
        }
    }
}
// acc[D/8] (16 x D) += P (16 x K, fragments in registers) times rows [0, K) of ``tile`` (K rows of
// D values: values in O = P V)
template <int D, int K, typename T>
__device__ __forceinline__ void mma_a_b(float (&acc)[D / 8][4], const unsigned int (&p)[K / 16][4],
                                        unsigned int tile) {
#pragma unroll
    for (int kk = 0; kk < K / 16; ++kk) {
#pragma unroll
        for (int n2 = 0; n2 < D / 16; ++n2) {
            unsigned int b[4];
            ldmatrix_x4_trans(b, bt_address<D>(tile, 16 * kk, 16 * n2));
            mma(acc[2 * n2], p[kk], b[0], b[1], T{});
            mma(acc[2 * n2 + 1], p[kk], b[2], b[3], T{});
        }
    }
}

// The same two products for MT m-tiles of 16 rows at once (a warp's 16 * MT rows): each B
// fragment read from shared memory feeds 2 * MT mma instructions instead of 2.
template <int D, int N, int MT, typename T>
__device__ __forceinline__ void mma_a_bt(float (&acc)[MT][N / 8][4],
                                         const unsigned int (&a)[MT][D / 16][4], unsigned int tile) {
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
        for (int n2 = 0; n2 < N / 16; ++n2) {
            unsigned int b[4];
            ldmatrix_x4(b, b_address<D>(tile, 16 * n2, 16 * kk));
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                mma(acc[mt][2 * n2], a[mt][kk], b[0], b[1], T{});
                mma(acc[mt][2 * n2 + 1], a[mt][kk], b[2], b[3], T{});
            }
        }
    }
}
template <int D, int K, int MT, typename T>
__device__ __forceinline__ void mma_a_b(float (&acc)[MT][D / 8][4],
                                        const unsigned int (&p)[MT][K / 16][4], unsigned int tile) {
#pragma unroll
    for (int kk = 0; kk < K / 16; ++kk) {
#pragma unroll
        for (int n2 = 0; n2 < D / 16; ++n2) {
            unsigned int b[4];
            ldmatrix_x4_trans(b, bt_address<D>(tile, 16 * kk, 16 * n2));
#pragma unroll
            for (int mt = 0; mt < MT; ++mt) {
                mma(acc[mt][2 * n2], p[mt][kk], b[0], b[1], T{});
                mma(acc[mt][2 * n2 + 1], p[mt][kk], b[2], b[3], T{});
            }
        }
    }
}

// Write a warp's 16 x D accumulator rows (times ``scale``) to global rows ``row0`` and
// ``row0 + 8`` of this lane (``dst`` points at the head's column 0 of row 0, rows ``stride``
// apart); rows past the sequence are skipped.
template <int D, typename T>
__device__ __forceinline__ void store_rows(T* dst, long long stride, const float (&acc)[D / 8][4],
                                           int row_a, int seq_len, float scale_a, float scale_b) {
    const int t = threadIdx.x & 3;
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
        if (row_a < seq_len)
            *reinterpret_cast<unsigned int*>(dst + row_a * stride + 8 * n + 2 * t) =
                pack2(acc[n][0] * scale_a, acc[n][1] * scale_a, T{});
        if (row_a + 8 < seq_len)
            *reinterpret_cast<unsigned int*>(dst + (row_a + 8) * stride + 8 * n + 2 * t) =
                pack2(acc[n][2] * scale_b, acc[n][3] * scale_b, T{});
    }
}

// ------------------------------------------------------------------ forward
// grid: (ceil(T / (64 MT)), B * H), 128 threads; each warp owns 16 MT query rows (MT m-tiles)
// and keys stream in tiles of BC. Dynamic shared memory: Q (64 MT rows) | K stages 0, 1 |
// V stages 0, 1 (BC rows each), rows of D + 8 elements.
template <typename T, int D, int MT, int BC>
__global__ void __launch_bounds__(MMA_THREADS, 2)
    attention_mma_forward_kernel(const T* __restrict__ qkv, T* __restrict__ out,
                                 float* __restrict__ lse, int seq_len, int n_heads,
                                 float scale_log2,
                                 const unsigned int* __restrict__ seed_ptr, unsigned int threshold,
                                 float keep_scale) {
    const unsigned int seed = *seed_ptr;  // in device memory: a CUDA graph's replays change it
    constexpr int ROWS = 64 * MT, Q_TILE = 2 * ROWS * (D + 8), KV_TILE = 2 * BC * (D + 8);
    extern __shared__ __align__(16) unsigned short mma_smem[];
    const unsigned int q_tile = shared_address(mma_smem);
    const unsigned int k_tiles = q_tile + Q_TILE, v_tiles = k_tiles + 2 * KV_TILE;

    const int E = n_heads * D, stride = 3 * E;
    const int bh = blockIdx.y, b = bh / n_heads, h = bh % n_heads;
    const int q0 = (gridDim.x - 1 - blockIdx.x) * ROWS;  // the longest (last) tiles first
    const int warp = threadIdx.x >> 5, g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
    const int row0 = q0 + 16 * MT * warp + g;  // this lane's rows: row0 + 16 mt + 8 half
    const T* base = qkv + (long long)b * seq_len * stride + h * D;
    const int n_tiles = (min(q0 + ROWS, seq_len) - 1) / BC + 1;  // causal: keys <= last row

    load_tile_async<ROWS, D>(q_tile, base, q0, seq_len, stride);
    load_tile_async<BC, D>(k_tiles, base + E, 0, seq_len, stride);
    load_tile_async<BC, D>(v_tiles, base + 2 * E, 0, seq_len, stride);
    copies_commit();

    unsigned int qf[MT][D / 16][4], row_key[MT][2];
    float o[MT][D / 8][4], m[MT][2], l[MT][2];  // l: this lane's partial sums of its rows
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            row_key[mt][half] =
                dropout_row_key(seed, (unsigned int)(bh * seq_len + row0 + 16 * mt + 8 * half));
            m[mt][half] = -TC_INF;
            l[mt][half] = 0.f;
        }
#pragma unroll
        for (int n = 0; n < D / 8; ++n) o[mt][n][0] = o[mt][n][1] = o[mt][n][2] = o[mt][n][3] = 0.f;
    }

    for (int j = 0; j < n_tiles; ++j) {
        const int stage = j & 1, key0 = j * BC;
        if (j + 1 < n_tiles) {  // the next tile, into the stage read one iteration ago
            load_tile_async<BC, D>(k_tiles + (stage ^ 1) * KV_TILE, base + E, key0 + BC, seq_len,
                                   stride);
            load_tile_async<BC, D>(v_tiles + (stage ^ 1) * KV_TILE, base + 2 * E, key0 + BC,
                                   seq_len, stride);
        }
        copies_commit();
        copies_wait_one();  // tile j (and Q) have landed
        __syncthreads();
        if (j == 0) {
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int kk = 0; kk < D / 16; ++kk)
                    ldmatrix_x4(qf[mt][kk], a_address<D>(q_tile, 16 * (MT * warp + mt), 16 * kk));
        }

        float s[MT][BC / 8][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int n = 0; n < BC / 8; ++n) s[mt][n][0] = s[mt][n][1] = s[mt][n][2] = s[mt][n][3] = 0.f;
        mma_a_bt<D, BC, MT, T>(s, qf, k_tiles + stage * KV_TILE);

        const bool diagonal = key0 + BC - 1 > q0;  // some key of the tile is after some row
        unsigned int p[MT][BC / 16][4];  // the probabilities as A fragments of O += P V
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
            const int row_a = row0 + 16 * mt, row_b = row_a + 8;
            float max_a = -TC_INF, max_b = -TC_INF;
#pragma unroll
            for (int n = 0; n < BC / 8; ++n) {
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    float v = s[mt][n][i] * scale_log2;
                    if (diagonal && key0 + 8 * n + 2 * t + (i & 1) > (i < 2 ? row_a : row_b))
                        v = -TC_INF;
                    s[mt][n][i] = v;
                }
                max_a = fmaxf(max_a, fmaxf(s[mt][n][0], s[mt][n][1]));
                max_b = fmaxf(max_b, fmaxf(s[mt][n][2], s[mt][n][3]));
            }
            // key 0 is in every row's first tile, so the running max is finite from tile 0 on
            const float new_a = fmaxf(m[mt][0], quad_max(max_a));
            const float new_b = fmaxf(m[mt][1], quad_max(max_b));
            const float alpha_a = exp2f(m[mt][0] - new_a), alpha_b = exp2f(m[mt][1] - new_b);
            m[mt][0] = new_a;
            m[mt][1] = new_b;
            l[mt][0] *= alpha_a;
            l[mt][1] *= alpha_b;
#pragma unroll
            for (int n = 0; n < D / 8; ++n) {
                o[mt][n][0] *= alpha_a;
                o[mt][n][1] *= alpha_a;
                o[mt][n][2] *= alpha_b;
                o[mt][n][3] *= alpha_b;
            }
#pragma unroll
            for (int n = 0; n < BC / 8; ++n) {
                float p0 = exp2f(s[mt][n][0] - new_a), p1 = exp2f(s[mt][n][1] - new_a);
                float p2 = exp2f(s[mt][n][2] - new_b), p3 = exp2f(s[mt][n][3] - new_b);
                l[mt][0] += p0 + p1;  // the normaliser counts every probability, O the kept
                l[mt][1] += p2 + p3;
                if (threshold) {
                    const int key = key0 + 8 * n + 2 * t;
                    p0 *= dropout_keep(row_key[mt][0], key, threshold, keep_scale);
                    p1 *= dropout_keep(row_key[mt][0], key + 1, threshold, keep_scale);
                    p2 *= dropout_keep(row_key[mt][1], key, threshold, keep_scale);
                    p3 *= dropout_keep(row_key[mt][1], key + 1, threshold, keep_scale);
                }
                p[mt][n >> 1][2 * (n & 1)] = pack2(p0, p1, T{});
                p[mt][n >> 1][2 * (n & 1) + 1] = pack2(p2, p3, T{});
            }
        }
        mma_a_b<D, BC, MT, T>(o, p, v_tiles + stage * KV_TILE);
        __syncthreads();  // every warp is done with this stage before it is refilled
    }

#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
        const int row_a = row0 + 16 * mt, row_b = row_a + 8;
        const float l_a = quad_sum(l[mt][0]), l_b = quad_sum(l[mt][1]);
        store_rows<D>(out + (long long)b * seq_len * E + h * D, E, o[mt], row_a, seq_len,
                      1.f / l_a, 1.f / l_b);
        if (t == 0) {
            if (row_a < seq_len) lse[(long long)bh * seq_len + row_a] = m[mt][0] + log2f(l_a);
            if (row_b < seq_len) lse[(long long)bh * seq_len + row_b] = m[mt][1] + log2f(l_b);
        }
    }
}

// ------------------------------------------------------------------ backward: dQ and Delta
// grid as the forward's: each warp owns 16 MT query rows, keys stream in tiles of BC.
// Dynamic shared memory: Q | dO (64 MT rows each) | K stages 0, 1 | V stages 0, 1 (BC rows).
template <typename T, int D, int MT, int BC>
__global__ void __launch_bounds__(MMA_THREADS, 2)
    attention_mma_backward_dq_kernel(const T* __restrict__ qkv, const T* __restrict__ out,
                                     const T* __restrict__ dout, const float* __restrict__ lse,
                                     float* __restrict__ delta, T* __restrict__ dqkv, int seq_len,
                                     int n_heads, float scale_log2, float scale,
                                     const unsigned int* __restrict__ seed_ptr,
                                     unsigned int threshold, float keep_scale) {
    const unsigned int seed = *seed_ptr;  // in device memory: a CUDA graph's replays change it
    constexpr int ROWS = 64 * MT, ROW_TILE = 2 * ROWS * (D + 8), KEY_TILE = 2 * BC * (D + 8);
    extern __shared__ __align__(16) unsigned short mma_smem[];
    const unsigned int q_tile = shared_address(mma_smem), do_tile = q_tile + ROW_TILE;
    const unsigned int k_tiles = q_tile + 2 * ROW_TILE, v_tiles = k_tiles + 2 * KEY_TILE;

    const int E = n_heads * D, stride = 3 * E;
    const int bh = blockIdx.y, b = bh / n_heads, h = bh % n_heads;
    const int q0 = (gridDim.x - 1 - blockIdx.x) * ROWS;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int row0 = q0 + 16 * MT * warp + g;  // this lane's rows: row0 + 16 mt + 8 half
    const T* base = qkv + (long long)b * seq_len * stride + h * D;
    const long long out_base = (long long)b * seq_len * E + h * D;  // in out and dout
    const long long stat0 = (long long)bh * seq_len;
    const int n_tiles = (min(q0 + ROWS, seq_len) - 1) / BC + 1;

    load_tile_async<ROWS, D>(q_tile, base, q0, seq_len, stride);
    load_tile_async<ROWS, D>(do_tile, dout + out_base, q0, seq_len, E);
    load_tile_async<BC, D>(k_tiles, base + E, 0, seq_len, stride);
    load_tile_async<BC, D>(v_tiles, base + 2 * E, 0, seq_len, stride);
    copies_commit();

    // Delta = rowsum(dO * O) of the warp's rows, a row at a time across the warp's lanes
    float delta_r[MT][2], lse_r[MT][2];
    unsigned int row_key[MT][2];
#pragma unroll
    for (int r = 0; r < 16 * MT; ++r) {
        const int row = q0 + 16 * MT * warp + r;
        float v = 0.f;
        if (row < seq_len) {
            const T* o_row = out + out_base + (long long)row * E;
            const T* do_row = dout + out_base + (long long)row * E;
#pragma unroll
            for (int c = 2 * lane; c < D; c += 64) {
                const unsigned int ov = *reinterpret_cast<const unsigned int*>(o_row + c);
                const unsigned int dv = *reinterpret_cast<const unsigned int*>(do_row + c);
                v += low_half(ov, T{}) * low_half(dv, T{}) + high_half(ov, T{}) * high_half(dv, T{});
            }
        }
        v = warp_sum(v);
        if (lane == 0 && row < seq_len) delta[stat0 + row] = v;
        if (g == r % 16) delta_r[r / 16][0] = v;  // rows g and g + 8 of m-tile r / 16
        if (g + 8 == r % 16) delta_r[r / 16][1] = v;
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int row = row0 + 16 * mt + 8 * half;
            lse_r[mt][half] = row < seq_len ? lse[stat0 + row] : 0.f;
            row_key[mt][half] = dropout_row_key(seed, (unsigned int)(stat0 + row));
        }

    unsigned int qf[MT][D / 16][4], dof[MT][D / 16][4];
    float dq[MT][D / 8][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int n = 0; n < D / 8; ++n) dq[mt][n][0] = dq[mt][n][1] = dq[mt][n][2] = dq[mt][n][3] = 0.f;

    for (int j = 0; j < n_tiles; ++j) {
        const int stage = j & 1, key0 = j * BC;
        if (j + 1 < n_tiles) {
            load_tile_async<BC, D>(k_tiles + (stage ^ 1) * KEY_TILE, base + E, key0 + BC, seq_len,
                                   stride);
            load_tile_async<BC, D>(v_tiles + (stage ^ 1) * KEY_TILE, base + 2 * E, key0 + BC,
                                   seq_len, stride);
        }
        copies_commit();
        copies_wait_one();
        __syncthreads();
        if (j == 0) {
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int kk = 0; kk < D / 16; ++kk) {
                    ldmatrix_x4(qf[mt][kk], a_address<D>(q_tile, 16 * (MT * warp + mt), 16 * kk));
                    ldmatrix_x4(dof[mt][kk], a_address<D>(do_tile, 16 * (MT * warp + mt), 16 * kk));
                }
        }
        float s[MT][BC / 8][4], dp[MT][BC / 8][4];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
            for (int n = 0; n < BC / 8; ++n)
#pragma unroll
                for (int i = 0; i < 4; ++i) s[mt][n][i] = dp[mt][n][i] = 0.f;
        mma_a_bt<D, BC, MT, T>(s, qf, k_tiles + stage * KEY_TILE);
        mma_a_bt<D, BC, MT, T>(dp, dof, v_tiles + stage * KEY_TILE);

        const bool diagonal = key0 + BC - 1 > q0;
        unsigned int ds[MT][BC / 16][4];  // dS as A fragments of dQ += dS K
#pragma unroll
        for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
            for (int n = 0; n < BC / 8; ++n) {
                float d[4];
#pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const int key = key0 + 8 * n + 2 * t + (i & 1), half = i >> 1;
                    float p = exp2f(s[mt][n][i] * scale_log2 - lse_r[mt][half]);
                    if (diagonal && key > row0 + 16 * mt + 8 * half) p = 0.f;
                    const float keep = dropout_keep(row_key[mt][half], key, threshold, keep_scale);
                    d[i] = p * (dp[mt][n][i] * keep - delta_r[mt][half]);
                }
                ds[mt][n >> 1][2 * (n & 1)] = pack2(d[0], d[1], T{});
                ds[mt][n >> 1][2 * (n & 1) + 1] = pack2(d[2], d[3], T{});
            }
        }
        mma_a_b<D, BC, MT, T>(dq, ds, k_tiles + stage * KEY_TILE);
        __syncthreads();
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
        store_rows<D>(dqkv + (long long)b * seq_len * stride + h * D, stride, dq[mt],
                      row0 + 16 * mt, seq_len, scale, scale);
}

// ------------------------------------------------------------------ backward: dK and dV
// grid: (ceil(T / 64), B * H); a block owns 64 keys (16 per warp) and walks the query tiles of
// BQ rows (64 for D = 64, 32 for D = 128: registers) that can see them. Dynamic shared memory:
// K | V (64 rows each) | Q stages 0, 1 | dO stages 0, 1 (BQ rows each); per query tile its lse
// (+inf past the sequence, so P = 0 there), Delta and dropout row key in static arrays.
template <int D>
struct DkvTile {
    static constexpr int BQ = D == 64 ? 64 : 32;
};

// The statistics of queries [query0, query0 + BQ) into shared arrays, by plain stores (a barrier
// separates them from their readers): lse (+inf past the sequence, so that P = 0 there), Delta
// and the dropout row key.
template <int BQ>
__device__ __forceinline__ void load_query_stats(float* lse_s, float* delta_s,
                                                 unsigned int* row_key_s,
                                                 const float* __restrict__ lse,
                                                 const float* __restrict__ delta, long long stat0,
                                                 int query0, int seq_len, unsigned int seed) {
    for (int i = threadIdx.x; i < BQ; i += MMA_THREADS) {
        const int query = query0 + i;
        const bool valid = query < seq_len;
        lse_s[i] = valid ? lse[stat0 + query] : TC_INF;
        delta_s[i] = valid ? delta[stat0 + query] : 0.f;
        row_key_s[i] = dropout_row_key(seed, (unsigned int)(stat0 + query));
    }
}

template <typename T, int D>
__global__ void __launch_bounds__(MMA_THREADS, 2)
    attention_mma_backward_dkv_kernel(const T* __restrict__ qkv, const T* __restrict__ dout,
                                      const float* __restrict__ lse,
                                      const float* __restrict__ delta, T* __restrict__ dqkv,
                                      int seq_len, int n_heads, float scale_log2, float scale,
                                      const unsigned int* __restrict__ seed_ptr,
                                      unsigned int threshold, float keep_scale) {
    const unsigned int seed = *seed_ptr;  // in device memory: a CUDA graph's replays change it
    constexpr int BQ = DkvTile<D>::BQ;
    constexpr int KEY_TILE = 2 * MMA_ROWS * (D + 8), Q_TILE = 2 * BQ * (D + 8);  // bytes
    extern __shared__ __align__(16) unsigned short mma_smem[];
    __shared__ float lse_s[2][BQ], delta_s[2][BQ];
    __shared__ unsigned int row_key_s[2][BQ];
    const unsigned int k_tile = shared_address(mma_smem), v_tile = k_tile + KEY_TILE;
    const unsigned int q_tiles = k_tile + 2 * KEY_TILE, do_tiles = q_tiles + 2 * Q_TILE;

    const int E = n_heads * D, stride = 3 * E;
    const int bh = blockIdx.y, b = bh / n_heads, h = bh % n_heads;
    const int key0 = blockIdx.x * MMA_ROWS;  // low keys see the most queries: started first
    const int warp = threadIdx.x >> 5, g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
    const int key_a = key0 + 16 * warp + g, key_b = key_a + 8;  // this lane's two key rows
    const T* base = qkv + (long long)b * seq_len * stride + h * D;
    const T* dout_base = dout + (long long)b * seq_len * E + h * D;
    const long long stat0 = (long long)bh * seq_len;
    const int first = key0 / BQ, n_tiles = (seq_len + BQ - 1) / BQ;

    load_tile_async<MMA_ROWS, D>(k_tile, base + E, key0, seq_len, stride);
    load_tile_async<MMA_ROWS, D>(v_tile, base + 2 * E, key0, seq_len, stride);
    load_tile_async<BQ, D>(q_tiles, base, first * BQ, seq_len, stride);
    load_tile_async<BQ, D>(do_tiles, dout_base, first * BQ, seq_len, E);
    copies_commit();
    load_query_stats<BQ>(lse_s[0], delta_s[0], row_key_s[0], lse, delta, stat0, first * BQ,
                          seq_len, seed);

    float dk[D / 8][4], dv[D / 8][4];
#pragma unroll
    for (int n = 0; n < D / 8; ++n)
#pragma unroll
        for (int i = 0; i < 4; ++i) dk[n][i] = dv[n][i] = 0.f;

    for (int j = first; j < n_tiles; ++j) {
        const int stage = (j - first) & 1, query0 = j * BQ;
        if (j + 1 < n_tiles) {
            load_tile_async<BQ, D>(q_tiles + (stage ^ 1) * Q_TILE, base, query0 + BQ, seq_len, stride);
            load_tile_async<BQ, D>(do_tiles + (stage ^ 1) * Q_TILE, dout_base, query0 + BQ, seq_len, E);
            load_query_stats<BQ>(lse_s[stage ^ 1], delta_s[stage ^ 1], row_key_s[stage ^ 1], lse, delta,
                              stat0, query0 + BQ, seq_len, seed);
        }
        copies_commit();
        copies_wait_one();
        __syncthreads();
        const unsigned int q_tile = q_tiles + stage * Q_TILE, do_tile = do_tiles + stage * Q_TILE;

        float s[BQ / 8][4], dp[BQ / 8][4];  // S^T and dP^T: rows = keys, columns = queries
#pragma unroll
        for (int n = 0; n < BQ / 8; ++n)
#pragma unroll
            for (int i = 0; i < 4; ++i) s[n][i] = dp[n][i] = 0.f;
        mma_as_bt<D, BQ, T>(s, k_tile, 16 * warp, q_tile);
        mma_as_bt<D, BQ, T>(dp, v_tile, 16 * warp, do_tile);

        const bool diagonal = query0 < key0 + MMA_ROWS;  // some query is before some key
        unsigned int pm[BQ / 16][4], ds[BQ / 16][4];  // (P * M)^T and dS^T as A fragments
#pragma unroll
        for (int n = 0; n < BQ / 8; ++n) {
            float pk[4], d[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int q = 8 * n + 2 * t + (i & 1);  // the query, within the tile
                const int key = i < 2 ? key_a : key_b;
                float p = exp2f(s[n][i] * scale_log2 - lse_s[stage][q]);
                if (diagonal && query0 + q < key) p = 0.f;
                const float keep = dropout_keep(row_key_s[stage][q], key, threshold, keep_scale);
                pk[i] = p * keep;
                d[i] = p * (dp[n][i] * keep - delta_s[stage][q]);
            }
            pm[n >> 1][2 * (n & 1)] = pack2(pk[0], pk[1], T{});
            pm[n >> 1][2 * (n & 1) + 1] = pack2(pk[2], pk[3], T{});
            ds[n >> 1][2 * (n & 1)] = pack2(d[0], d[1], T{});
            ds[n >> 1][2 * (n & 1) + 1] = pack2(d[2], d[3], T{});
        }
        mma_a_b<D, BQ, T>(dv, pm, do_tile);
        mma_a_b<D, BQ, T>(dk, ds, q_tile);
        __syncthreads();
    }
    T* row0 = dqkv + (long long)b * seq_len * stride + h * D;
    store_rows<D>(row0 + E, stride, dk, key_a, seq_len, scale, scale);
    store_rows<D>(row0 + 2 * E, stride, dv, key_a, seq_len, 1.f, 1.f);
}

// ================================================================== TF32: float32 storage
// The same three kernels for float32 inputs when the precision policy asks for TF32
// (tricycle.precision.Precision("tf32"), as cuBLAS's products then): every product is an
// mma.sync.m16n8k8 with TF32 operands (float32 rounded to 10 mantissa bits by cvt.rna, as
// cuBLAS rounds them) and float32 accumulators; the softmax and every statistic stay float32.
// Plain float32 never comes here (attention.cu keeps full precision).
//
// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k8", .tf32), lane = 4 g + t:
//   A (16x8):  a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4)
//   B (8x8):   b0 (k t, n g), b1 (k t+4, n g)
//   C (16x8):  c0 c1 (g, 2t..2t+1), c2 c3 (g+8, 2t..2t+1)
// A C tile covering keys 8j .. 8j+7 is the A operand of the next product's k-step j once the
// keys are taken in the order 2t -> k-slot t, 2t+1 -> k-slot t+4 (a sum does not care about
// order): A = {c0, c2, c1, c3}, and the B operand's k-slot t then reads row 2t of the tile,
// k-slot t+4 row 2t+1. So the probabilities never leave registers, as in the 16-bit kernels.
// There is no ldmatrix for 32-bit elements: fragments are single shared loads. Tiles are
// rows of D + 4 floats: D + 4 = 4 (mod 32) banks, so every fragment load below (rows g and
// columns t, or rows 2t and columns g) hits 32 different banks.

#define TF32_PAD 4

__device__ __forceinline__ unsigned int tf32(float f) {
    unsigned int r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(f));
    return r;
}
// c += a b for one m16n8k8 step
__device__ __forceinline__ void mma_tf32(float (&c)[4], const unsigned int (&a)[4], unsigned int b0,
                                         unsigned int b1) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Rows [row0, row0 + ROWS) of one head into a float tile of row length D + 4, by cp.async in
// 16-byte pieces; rows past the sequence are zeros.
template <int ROWS, int D>
__device__ __forceinline__ void load_rows_tf32_async(float* tile, const float* base, int row0,
                                                     int seq_len, int stride) {
    constexpr int CHUNKS = D / 4;
    const unsigned int address = shared_address(tile);
    for (int i = threadIdx.x; i < ROWS * CHUNKS; i += MMA_THREADS) {
        const int r = i / CHUNKS, c = i % CHUNKS, row = row0 + r;
        const bool valid = row < seq_len;
        copy16_async(address + 4 * (r * (D + TF32_PAD) + 4 * c),
                     base + (long long)(valid ? row : 0) * stride + 4 * c, valid);
    }
}

// acc[N/8] (16 x N) += A B, A = rows [a_row0, a_row0 + 16) of ``a_tile`` (16 x D), B = the
// first N rows of ``tile`` transposed (n-rows of D k-values: keys in S = Q K^T)
template <int D, int N>
__device__ __forceinline__ void tf32_mma_a_bt(float (&acc)[N / 8][4], const float* a_tile,
                                              int a_row0, const float* tile) {
    constexpr int P = D + TF32_PAD;
    const int g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
    const float* a_row = a_tile + (a_row0 + g) * P + t;
    const float* b_row = tile + g * P + t;
#pragma unroll
    for (int kk = 0; kk < D / 8; ++kk) {
        const unsigned int a[4] = {tf32(a_row[8 * kk]), tf32(a_row[8 * P + 8 * kk]),
                                   tf32(a_row[8 * kk + 4]), tf32(a_row[8 * P + 8 * kk + 4])};
#pragma unroll
        for (int n = 0; n < N / 8; ++n) {
            const float* b = b_row + 8 * n * P + 8 * kk;
            mma_tf32(acc[n], a, tf32(b[0]), tf32(b[4]));
        }
    }
}

// acc[D/8] (16 x D) += C V: C (16 x K) the accumulator tiles ``c`` of a previous product
// (probabilities or dS, rows of this warp, columns = keys), V the first K rows of ``tile``
// (K rows of D values), keys in the slot order of the section comment
template <int D, int K>
__device__ __forceinline__ void tf32_mma_c_b(float (&acc)[D / 8][4], const float (&c)[K / 8][4],
                                             const float* tile) {
    constexpr int P = D + TF32_PAD;
    const int g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
#pragma unroll
    for (int kk = 0; kk < K / 8; ++kk) {
        const unsigned int a[4] = {tf32(c[kk][0]), tf32(c[kk][2]), tf32(c[kk][1]), tf32(c[kk][3])};
        const float* b = tile + (8 * kk + 2 * t) * P + g;  // rows 2t and 2t + 1, column g
#pragma unroll
        for (int n = 0; n < D / 8; ++n) mma_tf32(acc[n], a, tf32(b[8 * n]), tf32(b[P + 8 * n]));
    }
}

// Write a warp's 16 x D accumulator rows (times ``scale``) to global rows ``row_a`` and
// ``row_a + 8`` of this lane; rows past the sequence are skipped.
template <int D>
__device__ __forceinline__ void store_rows_tf32(float* dst, long long stride,
                                                const float (&acc)[D / 8][4], int row_a,
                                                int seq_len, float scale_a, float scale_b) {
    const int t = threadIdx.x & 3;
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
        if (row_a < seq_len)
            *reinterpret_cast<float2*>(dst + row_a * stride + 8 * n + 2 * t) =
                make_float2(acc[n][0] * scale_a, acc[n][1] * scale_a);
        if (row_a + 8 < seq_len)
            *reinterpret_cast<float2*>(dst + (row_a + 8) * stride + 8 * n + 2 * t) =
                make_float2(acc[n][2] * scale_b, acc[n][3] * scale_b);
    }
}

// ------------------------------------------------------------------ TF32 forward
// grid: (ceil(T / 64), B * H), 128 threads; each warp owns 16 query rows, keys stream in
// tiles of BC. Dynamic shared memory: Q (64 rows) | K stages 0, 1 | V stages 0, 1 (BC rows).
template <int D, int BC>
__global__ void __launch_bounds__(MMA_THREADS, 2)
    attention_tf32_forward_kernel(const float* __restrict__ qkv, float* __restrict__ out,
                                  float* __restrict__ lse, int seq_len, int n_heads,
                                  float scale_log2,
                                  const unsigned int* __restrict__ seed_ptr, unsigned int threshold,
                                  float keep_scale) {
    const unsigned int seed = *seed_ptr;  // in device memory: a CUDA graph's replays change it
    constexpr int P = D + TF32_PAD;
    extern __shared__ __align__(16) unsigned short mma_smem[];
    float* q_tile = reinterpret_cast<float*>(mma_smem);
    float* k_tiles = q_tile + MMA_ROWS * P;
    float* v_tiles = k_tiles + 2 * BC * P;

    const int E = n_heads * D, stride = 3 * E;
    const int bh = blockIdx.y, b = bh / n_heads, h = bh % n_heads;
    const int q0 = (gridDim.x - 1 - blockIdx.x) * MMA_ROWS;  // the longest (last) tiles first
    const int warp = threadIdx.x >> 5, g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
    const int row_a = q0 + 16 * warp + g, row_b = row_a + 8;  // this lane's two rows
    const float* base = qkv + (long long)b * seq_len * stride + h * D;
    const int n_tiles = (min(q0 + MMA_ROWS, seq_len) - 1) / BC + 1;  // causal: keys <= last row

    load_rows_tf32_async<MMA_ROWS, D>(q_tile, base, q0, seq_len, stride);
    load_rows_tf32_async<BC, D>(k_tiles, base + E, 0, seq_len, stride);
    load_rows_tf32_async<BC, D>(v_tiles, base + 2 * E, 0, seq_len, stride);
    copies_commit();

    const unsigned int key_a = dropout_row_key(seed, (unsigned int)(bh * seq_len + row_a));
    const unsigned int key_b = dropout_row_key(seed, (unsigned int)(bh * seq_len + row_b));
    float o[D / 8][4], m_a = -TC_INF, m_b = -TC_INF, l_a = 0.f, l_b = 0.f;
#pragma unroll
    for (int n = 0; n < D / 8; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;

    for (int j = 0; j < n_tiles; ++j) {
        const int stage = j & 1, key0 = j * BC;
        if (j + 1 < n_tiles) {  // the next tile, into the stage read one iteration ago
            load_rows_tf32_async<BC, D>(k_tiles + (stage ^ 1) * BC * P, base + E, key0 + BC,
                                        seq_len, stride);
            load_rows_tf32_async<BC, D>(v_tiles + (stage ^ 1) * BC * P, base + 2 * E, key0 + BC,
                                        seq_len, stride);
        }
        copies_commit();
        copies_wait_one();  // tile j (and Q) have landed
        __syncthreads();

        float s[BC / 8][4];
#pragma unroll
        for (int n = 0; n < BC / 8; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
        tf32_mma_a_bt<D, BC>(s, q_tile, 16 * warp, k_tiles + stage * BC * P);

        const bool diagonal = key0 + BC - 1 > q0;  // some key of the tile is after some row
        float max_a = -TC_INF, max_b = -TC_INF;
#pragma unroll
        for (int n = 0; n < BC / 8; ++n) {
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                float v = s[n][i] * scale_log2;
                if (diagonal && key0 + 8 * n + 2 * t + (i & 1) > (i < 2 ? row_a : row_b))
                    v = -TC_INF;
                s[n][i] = v;
            }
            max_a = fmaxf(max_a, fmaxf(s[n][0], s[n][1]));
            max_b = fmaxf(max_b, fmaxf(s[n][2], s[n][3]));
        }
        // key 0 is in every row's first tile, so the running max is finite from tile 0 on
        const float new_a = fmaxf(m_a, quad_max(max_a)), new_b = fmaxf(m_b, quad_max(max_b));
        const float alpha_a = exp2f(m_a - new_a), alpha_b = exp2f(m_b - new_b);
        m_a = new_a;
        m_b = new_b;
        l_a *= alpha_a;
        l_b *= alpha_b;
#pragma unroll
        for (int n = 0; n < D / 8; ++n) {
            o[n][0] *= alpha_a;
            o[n][1] *= alpha_a;
            o[n][2] *= alpha_b;
            o[n][3] *= alpha_b;
        }
#pragma unroll
        for (int n = 0; n < BC / 8; ++n) {  // s becomes the kept probabilities
            s[n][0] = exp2f(s[n][0] - new_a);
            s[n][1] = exp2f(s[n][1] - new_a);
            s[n][2] = exp2f(s[n][2] - new_b);
            s[n][3] = exp2f(s[n][3] - new_b);
            l_a += s[n][0] + s[n][1];  // the normaliser counts every probability, O the kept
            l_b += s[n][2] + s[n][3];
            if (threshold) {
                const int key = key0 + 8 * n + 2 * t;
                s[n][0] *= dropout_keep(key_a, key, threshold, keep_scale);
                s[n][1] *= dropout_keep(key_a, key + 1, threshold, keep_scale);
                s[n][2] *= dropout_keep(key_b, key, threshold, keep_scale);
                s[n][3] *= dropout_keep(key_b, key + 1, threshold, keep_scale);
            }
        }
        tf32_mma_c_b<D, BC>(o, s, v_tiles + stage * BC * P);
        __syncthreads();  // every warp is done with this stage before it is refilled
    }

    const float sum_a = quad_sum(l_a), sum_b = quad_sum(l_b);
    store_rows_tf32<D>(out + (long long)b * seq_len * E + h * D, E, o, row_a, seq_len,
                       1.f / sum_a, 1.f / sum_b);
    if (t == 0) {
        if (row_a < seq_len) lse[(long long)bh * seq_len + row_a] = m_a + log2f(sum_a);
        if (row_b < seq_len) lse[(long long)bh * seq_len + row_b] = m_b + log2f(sum_b);
    }
}

// ------------------------------------------------------------------ TF32 backward: dQ, Delta
// grid as the forward's; keys stream in tiles of BC. Dynamic shared memory: Q | dO (64 rows
// each) | K stages 0, 1 | V stages 0, 1 (BC rows each).
template <int D, int BC>
__global__ void __launch_bounds__(MMA_THREADS, 2)
    attention_tf32_backward_dq_kernel(const float* __restrict__ qkv, const float* __restrict__ out,
                                      const float* __restrict__ dout,
                                      const float* __restrict__ lse, float* __restrict__ delta,
                                      float* __restrict__ dqkv, int seq_len, int n_heads,
                                      float scale_log2, float scale,
                                      const unsigned int* __restrict__ seed_ptr,
                                      unsigned int threshold, float keep_scale) {
    const unsigned int seed = *seed_ptr;  // in device memory: a CUDA graph's replays change it
    constexpr int P = D + TF32_PAD;
    extern __shared__ __align__(16) unsigned short mma_smem[];
    float* q_tile = reinterpret_cast<float*>(mma_smem);
    float* do_tile = q_tile + MMA_ROWS * P;
    float* k_tiles = do_tile + MMA_ROWS * P;
    float* v_tiles = k_tiles + 2 * BC * P;

    const int E = n_heads * D, stride = 3 * E;
    const int bh = blockIdx.y, b = bh / n_heads, h = bh % n_heads;
    const int q0 = (gridDim.x - 1 - blockIdx.x) * MMA_ROWS;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int row_a = q0 + 16 * warp + g, row_b = row_a + 8;
    const float* base = qkv + (long long)b * seq_len * stride + h * D;
    const long long out_base = (long long)b * seq_len * E + h * D;  // in out and dout
    const long long stat0 = (long long)bh * seq_len;
    const int n_tiles = (min(q0 + MMA_ROWS, seq_len) - 1) / BC + 1;

    load_rows_tf32_async<MMA_ROWS, D>(q_tile, base, q0, seq_len, stride);
    load_rows_tf32_async<MMA_ROWS, D>(do_tile, dout + out_base, q0, seq_len, E);
    load_rows_tf32_async<BC, D>(k_tiles, base + E, 0, seq_len, stride);
    load_rows_tf32_async<BC, D>(v_tiles, base + 2 * E, 0, seq_len, stride);
    copies_commit();

    // Delta = rowsum(dO * O) of the warp's 16 rows, a row at a time across the warp's lanes
    float delta_a = 0.f, delta_b = 0.f;
#pragma unroll
    for (int r = 0; r < 16; ++r) {
        const int row = q0 + 16 * warp + r;
        float v = 0.f;
        if (row < seq_len) {
            const float* o_row = out + out_base + (long long)row * E;
            const float* do_row = dout + out_base + (long long)row * E;
#pragma unroll
            for (int c = lane; c < D; c += 32) v += o_row[c] * do_row[c];
        }
        v = warp_sum(v);
        if (lane == 0 && row < seq_len) delta[stat0 + row] = v;
        if (g == r) delta_a = v;
        if (g + 8 == r) delta_b = v;
    }
    const float lse_a = row_a < seq_len ? lse[stat0 + row_a] : 0.f;
    const float lse_b = row_b < seq_len ? lse[stat0 + row_b] : 0.f;
    const unsigned int key_a = dropout_row_key(seed, (unsigned int)(stat0 + row_a));
    const unsigned int key_b = dropout_row_key(seed, (unsigned int)(stat0 + row_b));

    float dq[D / 8][4];
#pragma unroll
    for (int n = 0; n < D / 8; ++n) dq[n][0] = dq[n][1] = dq[n][2] = dq[n][3] = 0.f;

    for (int j = 0; j < n_tiles; ++j) {
        const int stage = j & 1, key0 = j * BC;
        if (j + 1 < n_tiles) {
            load_rows_tf32_async<BC, D>(k_tiles + (stage ^ 1) * BC * P, base + E, key0 + BC,
                                        seq_len, stride);
            load_rows_tf32_async<BC, D>(v_tiles + (stage ^ 1) * BC * P, base + 2 * E, key0 + BC,
                                        seq_len, stride);
        }
        copies_commit();
        copies_wait_one();
        __syncthreads();
        const float* k_tile = k_tiles + stage * BC * P;

        float s[BC / 8][4], dp[BC / 8][4];
#pragma unroll
        for (int n = 0; n < BC / 8; ++n)
#pragma unroll
            for (int i = 0; i < 4; ++i) s[n][i] = dp[n][i] = 0.f;
        tf32_mma_a_bt<D, BC>(s, q_tile, 16 * warp, k_tile);
        tf32_mma_a_bt<D, BC>(dp, do_tile, 16 * warp, v_tiles + stage * BC * P);

        const bool diagonal = key0 + BC - 1 > q0;
#pragma unroll
        for (int n = 0; n < BC / 8; ++n) {  // s becomes dS = P * (M * dP - Delta)
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int key = key0 + 8 * n + 2 * t + (i & 1);
                const bool upper = i < 2;
                float p = exp2f(s[n][i] * scale_log2 - (upper ? lse_a : lse_b));
                if (diagonal && key > (upper ? row_a : row_b)) p = 0.f;
                const float keep = dropout_keep(upper ? key_a : key_b, key, threshold, keep_scale);
                s[n][i] = p * (dp[n][i] * keep - (upper ? delta_a : delta_b));
            }
        }
        tf32_mma_c_b<D, BC>(dq, s, k_tile);
        __syncthreads();
    }
    store_rows_tf32<D>(dqkv + (long long)b * seq_len * stride + h * D, stride, dq, row_a, seq_len,
                       scale, scale);
}

// ------------------------------------------------------------------ TF32 backward: dK, dV
// grid: (ceil(T / 64), B * H); a block owns 64 keys (16 per warp) and walks the query tiles of
// BQ rows that can see them. Dynamic shared memory: K | V (64 rows each) | Q stages 0, 1 |
// dO stages 0, 1 (BQ rows each); per query tile its lse (+inf past the sequence, so P = 0
// there), Delta and dropout row key in static arrays (load_query_stats).
template <int D, int BQ>
__global__ void __launch_bounds__(MMA_THREADS, 2)
    attention_tf32_backward_dkv_kernel(const float* __restrict__ qkv, const float* __restrict__ dout,
                                       const float* __restrict__ lse,
                                       const float* __restrict__ delta, float* __restrict__ dqkv,
                                       int seq_len, int n_heads, float scale_log2, float scale,
                                       const unsigned int* __restrict__ seed_ptr,
                                       unsigned int threshold, float keep_scale) {
    const unsigned int seed = *seed_ptr;  // in device memory: a CUDA graph's replays change it
    constexpr int P = D + TF32_PAD;
    extern __shared__ __align__(16) unsigned short mma_smem[];
    __shared__ float lse_s[2][BQ], delta_s[2][BQ];
    __shared__ unsigned int row_key_s[2][BQ];
    float* k_tile = reinterpret_cast<float*>(mma_smem);
    float* v_tile = k_tile + MMA_ROWS * P;
    float* q_tiles = v_tile + MMA_ROWS * P;
    float* do_tiles = q_tiles + 2 * BQ * P;

    const int E = n_heads * D, stride = 3 * E;
    const int bh = blockIdx.y, b = bh / n_heads, h = bh % n_heads;
    const int key0 = blockIdx.x * MMA_ROWS;  // low keys see the most queries: started first
    const int warp = threadIdx.x >> 5, g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
    const int key_a = key0 + 16 * warp + g, key_b = key_a + 8;  // this lane's two key rows
    const float* base = qkv + (long long)b * seq_len * stride + h * D;
    const float* dout_base = dout + (long long)b * seq_len * E + h * D;
    const long long stat0 = (long long)bh * seq_len;
    const int first = key0 / BQ, n_tiles = (seq_len + BQ - 1) / BQ;

    load_rows_tf32_async<MMA_ROWS, D>(k_tile, base + E, key0, seq_len, stride);
    load_rows_tf32_async<MMA_ROWS, D>(v_tile, base + 2 * E, key0, seq_len, stride);
    load_rows_tf32_async<BQ, D>(q_tiles, base, first * BQ, seq_len, stride);
    load_rows_tf32_async<BQ, D>(do_tiles, dout_base, first * BQ, seq_len, E);
    copies_commit();
    load_query_stats<BQ>(lse_s[0], delta_s[0], row_key_s[0], lse, delta, stat0, first * BQ,
                         seq_len, seed);

    float dk[D / 8][4], dv[D / 8][4];
#pragma unroll
    for (int n = 0; n < D / 8; ++n)
#pragma unroll
        for (int i = 0; i < 4; ++i) dk[n][i] = dv[n][i] = 0.f;

    for (int j = first; j < n_tiles; ++j) {
        const int stage = (j - first) & 1, query0 = j * BQ;
        if (j + 1 < n_tiles) {
            load_rows_tf32_async<BQ, D>(q_tiles + (stage ^ 1) * BQ * P, base, query0 + BQ,
                                        seq_len, stride);
            load_rows_tf32_async<BQ, D>(do_tiles + (stage ^ 1) * BQ * P, dout_base, query0 + BQ,
                                        seq_len, E);
            load_query_stats<BQ>(lse_s[stage ^ 1], delta_s[stage ^ 1], row_key_s[stage ^ 1], lse,
                                 delta, stat0, query0 + BQ, seq_len, seed);
        }
        copies_commit();
        copies_wait_one();
        __syncthreads();
        const float* q_tile = q_tiles + stage * BQ * P;
        const float* do_tile = do_tiles + stage * BQ * P;

        float s[BQ / 8][4], dp[BQ / 8][4];  // S^T and dP^T: rows = keys, columns = queries
#pragma unroll
        for (int n = 0; n < BQ / 8; ++n)
#pragma unroll
            for (int i = 0; i < 4; ++i) s[n][i] = dp[n][i] = 0.f;
        tf32_mma_a_bt<D, BQ>(s, k_tile, 16 * warp, q_tile);
        tf32_mma_a_bt<D, BQ>(dp, v_tile, 16 * warp, do_tile);

        const bool diagonal = query0 < key0 + MMA_ROWS;  // some query is before some key
#pragma unroll
        for (int n = 0; n < BQ / 8; ++n) {  // s becomes (P * M)^T, dp becomes dS^T
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int q = 8 * n + 2 * t + (i & 1);  // the query, within the tile
                const int key = i < 2 ? key_a : key_b;
                float p = exp2f(s[n][i] * scale_log2 - lse_s[stage][q]);
                if (diagonal && query0 + q < key) p = 0.f;
                const float keep = dropout_keep(row_key_s[stage][q], key, threshold, keep_scale);
                s[n][i] = p * keep;
                dp[n][i] = p * (dp[n][i] * keep - delta_s[stage][q]);
            }
        }
        tf32_mma_c_b<D, BQ>(dv, s, do_tile);
        tf32_mma_c_b<D, BQ>(dk, dp, q_tile);
        __syncthreads();
    }
    float* row0 = dqkv + (long long)b * seq_len * stride + h * D;
    store_rows_tf32<D>(row0 + E, stride, dk, key_a, seq_len, scale, scale);
    store_rows_tf32<D>(row0 + 2 * E, stride, dv, key_a, seq_len, 1.f, 1.f);
}
