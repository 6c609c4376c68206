// attention_mma.cu: causal multi-head attention on tensor cores, head dims 64 and 128
// (FlashAttention-2, Dao 2023): float16 and bfloat16, and float32 under a TF32 policy.
//
// Reference: tricycle/attention.py attention_forward / attention_backward; same inputs, outputs
// and saved statistics as attention.cu (the CUDA-core version, which plain float32 and head
// dim 32 keep): qkv (B, T, 3E) packs q | k | v, each of H heads of D dims, row stride 3E; out
// (B, T, E); lse (B, H, T) is the base-2 log-sum-exp of each row's scores times
// log2(e) / sqrt(D).
//
// Every product is an mma.sync with float32 accumulators. A block is 4 warps; each warp owns
// 16 rows (queries in the forward and dQ kernels, keys in the dK/dV kernel) and streams the
// other side in tiles through shared memory, loaded by cp.async one tile ahead of use (two
// stages). The softmax runs on the accumulator fragments in registers (online: a running max
// and sum per row), and the probabilities go straight back into the next product as its A
// operand (``mma_c_b``), so P never touches shared memory.
//
//     forward:  S = Q K^T,  P = exp2(S * scale_log2 - m),  O += (P * M) V,  lse = m + log2(l)
//     dQ:       P from lse,  dP = dO V^T,  dS = P * (M * dP - Delta),  dQ += dS K
//     dK, dV:   S^T = K Q^T,  dV += (P * M)^T dO,  dP^T = V dO^T,  dK += dS^T Q
//
// with Delta = rowsum(dO * O) and M the dropout multiplier (common.cuh; 1 without dropout).
// The backward is two kernels, so every output element has one writer (deterministic, no
// atomics): dQ over query tiles (it also writes Delta), then dK and dV over key tiles.
//
// One algorithm, two operand formats: the storage type T picks the format, and what differs
// between them is the section "operand formats" below (with the tiles' padding and the
// global loads and stores, which overload on T):
//   float16, bfloat16: mma.m16n8k16, two 16-bit values to a register, fragments by ldmatrix;
//   float32 (TF32): mma.m16n8k8 on float32 rounded to TF32 (10 mantissa bits, cvt.rna, as
//     cuBLAS rounds them under the policy); the softmax and every statistic stay float32.
//     Plain float32 never comes here (attention.cu keeps full precision).
//
// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k16" and "... m16n8k8", .tf32),
// lane = 4 g + t; two 16-bit values share a register, the lower index in the lower half:
//   16-bit A (16x16): a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..)
//          B (16x8):  b0 (k 2t..2t+1, n g), b1 (k 2t+8.., n g)
//   TF32   A (16x8):  a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4)
//          B (8x8):   b0 (k t, n g), b1 (k t+4, n g)
//   C (16x8, float):  c0 c1 (g, 2t..2t+1), c2 c3 (g+8, 2t..2t+1)
// ldmatrix.x4 loads four 8x8 matrices of 16-bit elements whose row addresses come from lanes
// 0-7, 8-15, 16-23, 24-31; each lane receives row g, columns 2t and 2t+1 of each (with .trans:
// column g, rows 2t and 2t+1). There is no ldmatrix for 32-bit elements: TF32 fragments are
// single shared loads. Shared-memory rows are padded by 16 bytes (8 16-bit elements, 4
// floats): the 8 rows of a 16-bit 8x8 matrix fall in 8 different 4-bank groups, and a float
// row of D + 4 starts 4 banks on from the last, so the TF32 fragment loads (rows g and
// columns t, or rows 2t and columns g) hit 32 different banks: no bank conflicts.

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
__device__ __forceinline__ unsigned int shared_load(unsigned int address) {
    unsigned int v;
    asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(address) : "memory");
    return v;
}
// c += a b for one mma step; the storage type picks the instruction
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
__device__ __forceinline__ void mma(float (&c)[4], const unsigned int (&a)[4], unsigned int b0,
                                    unsigned int b1, float) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, "
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
// a float rounded to TF32, as an mma operand
__device__ __forceinline__ unsigned int tf32(float f) {
    unsigned int r;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(f));
    return r;
}

__device__ __forceinline__ float quad_max(float v) {
    v = fmaxf(v, __shfl_xor_sync(TC_FULL_MASK, v, 1));
    return fmaxf(v, __shfl_xor_sync(TC_FULL_MASK, v, 2));
}
__device__ __forceinline__ float quad_sum(float v) {
    v += __shfl_xor_sync(TC_FULL_MASK, v, 1);
    return v + __shfl_xor_sync(TC_FULL_MASK, v, 2);
}

// ------------------------------------------------------------------ tiles and global rows
template <typename T>
constexpr bool IS_TF32 = false;
template <>
constexpr bool IS_TF32<float> = true;
template <typename T>
constexpr int BYTES = sizeof(T);
// elements of a shared tile's row: D and 16 bytes of padding
template <typename T, int D>
constexpr int ROW = D + 16 / BYTES<T>;

// Rows [row0, row0 + ROWS) of one head (``base`` points at row 0 of it, rows ``stride`` apart)
// into the shared tile at address ``tile`` by cp.async; rows past the sequence are zeros.
template <int ROWS, int D, typename T>
__device__ __forceinline__ void load_tile_async(unsigned int tile, const T* base, int row0,
                                                int seq_len, int stride) {
    constexpr int CHUNK = 16 / BYTES<T>, CHUNKS = D / CHUNK;  // 16-byte pieces of a row
    for (int i = threadIdx.x; i < ROWS * CHUNKS; i += MMA_THREADS) {
        const int r = i / CHUNKS, c = i % CHUNKS, row = row0 + r;
        const bool valid = row < seq_len;
        copy16_async(tile + BYTES<T> * (r * ROW<T, D> + CHUNK * c),
                     base + (long long)(valid ? row : 0) * stride + CHUNK * c, valid);
    }
}

// two consecutive elements of a global row as floats, and two floats stored into one
__device__ __forceinline__ float2 load2(const float* p) {
    return *reinterpret_cast<const float2*>(p);
}
template <typename T>
__device__ __forceinline__ float2 load2(const T* p) {
    const unsigned int v = *reinterpret_cast<const unsigned int*>(p);  // little endian
    return make_float2(to_float(T{(unsigned short)(v & 0xffffu)}),
                       to_float(T{(unsigned short)(v >> 16)}));
}
__device__ __forceinline__ void store2(float* p, float lo, float hi) {
    *reinterpret_cast<float2*>(p) = make_float2(lo, hi);
}
template <typename T>
__device__ __forceinline__ void store2(T* p, float lo, float hi) {
    *reinterpret_cast<unsigned int*>(p) = pack2(lo, hi, T{});
}

// Write a warp's 16 x D accumulator rows (times ``scale_a`` and ``scale_b``) to global rows
// ``row_a`` and ``row_a + 8`` of this lane (``dst`` points at the head's column 0 of row 0,
// rows ``stride`` apart); rows past the sequence are skipped.
template <int D, typename T>
__device__ __forceinline__ void store_rows(T* dst, long long stride, const float (&acc)[D / 8][4],
                                           int row_a, int seq_len, float scale_a, float scale_b) {
    const int t = threadIdx.x & 3;
#pragma unroll
    for (int n = 0; n < D / 8; ++n) {
        if (row_a < seq_len)
            store2(dst + row_a * stride + 8 * n + 2 * t, acc[n][0] * scale_a, acc[n][1] * scale_a);
        if (row_a + 8 < seq_len)
            store2(dst + (row_a + 8) * stride + 8 * n + 2 * t, acc[n][2] * scale_b,
                   acc[n][3] * scale_b);
    }
}

template <int N>
__device__ __forceinline__ void zero(float (&acc)[N][4]) {
#pragma unroll
    for (int n = 0; n < N; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.f;
}

// ------------------------------------------------------------------ operand formats
// Shared addresses of the 8x8 matrices that one ldmatrix.x4 gathers, for this lane, from a
// 16-bit tile (``row0``, ``col0``: the 16x16 block's corner):
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
// the float at a shared address, rounded to TF32
__device__ __forceinline__ unsigned int tf32_at(unsigned int address) {
    return tf32(__uint_as_float(shared_load(address)));
}

// The A operand of S = A B^T: a warp's 16 rows [row0, row0 + 16) of a shared tile, read from
// the tile at each product.
struct TileRows {
    unsigned int tile;
    int row0;
};
// The same for the rows of a tile that stays for the whole kernel (Q; dO in the dQ kernel):
// the 16-bit formats load their fragments into registers once; TF32 reads them from the tile
// at each product (held, its fragments would take twice the registers of the 16-bit ones).
template <typename T, int D>
struct OwnRows {
    unsigned int a[D / 16][4];
    __device__ __forceinline__ void load(unsigned int tile, int row0) {
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) ldmatrix_x4(a[kk], a_address<D>(tile, row0, 16 * kk));
    }
};
template <int D>
struct OwnRows<float, D> : TileRows {
    __device__ __forceinline__ void load(unsigned int at, int row) {
        tile = at;
        row0 = row;
    }
};

// acc[N/8] (16 x N) += A B, A from ``a`` (16 x D), B = rows [0, N) of ``tile`` transposed (the
// tile holds n-rows of D k-values: keys in S = Q K^T)
template <int D, int N, typename T>
__device__ __forceinline__ void mma_a_bt(float (&acc)[N / 8][4], TileRows a, unsigned int tile) {
    if constexpr (IS_TF32<T>) {
        constexpr int P = ROW<T, D>;
        const int g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
        const unsigned int a_row = a.tile + 4 * ((a.row0 + g) * P + t), b_row = tile + 4 * (g * P + t);
#pragma unroll
        for (int kk = 0; kk < D / 8; ++kk) {
            const unsigned int f[4] = {tf32_at(a_row + 4 * 8 * kk), tf32_at(a_row + 4 * (8 * P + 8 * kk)),
                                       tf32_at(a_row + 4 * (8 * kk + 4)),
                                       tf32_at(a_row + 4 * (8 * P + 8 * kk + 4))};
#pragma unroll
            for (int n = 0; n < N / 8; ++n) {
                const unsigned int b = b_row + 4 * (8 * n * P + 8 * kk);
                mma(acc[n], f, tf32_at(b), tf32_at(b + 4 * 4), T{});
            }
        }
    } else {
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            unsigned int f[4];
            ldmatrix_x4(f, a_address<D>(a.tile, a.row0, 16 * kk));
#pragma unroll
            for (int n2 = 0; n2 < N / 16; ++n2) {
                unsigned int b[4];
                ldmatrix_x4(b, b_address<D>(tile, 16 * n2, 16 * kk));
                mma(acc[2 * n2], f, b[0], b[1], T{});
                mma(acc[2 * n2 + 1], f, b[2], b[3], T{});
            }
        }
    }
}
template <int D, int N, typename T>
__device__ __forceinline__ void mma_a_bt(float (&acc)[N / 8][4], const OwnRows<T, D>& a,
                                         unsigned int tile) {
    if constexpr (IS_TF32<T>) {
        mma_a_bt<D, N, T>(acc, TileRows{a.tile, a.row0}, tile);
    } else {
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
            for (int n2 = 0; n2 < N / 16; ++n2) {
                unsigned int b[4];
                ldmatrix_x4(b, b_address<D>(tile, 16 * n2, 16 * kk));
                mma(acc[2 * n2], a.a[kk], b[0], b[1], T{});
                mma(acc[2 * n2 + 1], a.a[kk], b[2], b[3], T{});
            }
        }
    }
}

// acc[D/8] (16 x D) += C B: C (16 x K) the accumulators of a previous product (P or dS: rows
// of this warp, columns the k index), B = rows [0, K) of ``tile`` (K rows of D values: V in
// O = P V). The C layout of a pair of m16n8 tiles is the A layout of one m16n8k16 step (two
// 16-bit values to a register); a TF32 C tile is the A operand of one m16n8k8 step once its
// columns are taken in the order 2t -> k-slot t, 2t+1 -> k-slot t+4 (a sum does not care
// about order): A = {c0, c2, c1, c3}, and B's k-slot t then reads row 2t, k-slot t+4 row 2t+1.
template <int D, int K, typename T>
__device__ __forceinline__ void mma_c_b(float (&acc)[D / 8][4], const float (&c)[K / 8][4],
                                        unsigned int tile) {
    if constexpr (IS_TF32<T>) {
        constexpr int P = ROW<T, D>;
        const int g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
#pragma unroll
        for (int kk = 0; kk < K / 8; ++kk) {
            const unsigned int a[4] = {tf32(c[kk][0]), tf32(c[kk][2]), tf32(c[kk][1]), tf32(c[kk][3])};
            const unsigned int b = tile + 4 * ((8 * kk + 2 * t) * P + g);  // rows 2t, 2t+1; column g
#pragma unroll
            for (int n = 0; n < D / 8; ++n) mma(acc[n], a, tf32_at(b + 4 * 8 * n), tf32_at(b + 4 * (P + 8 * n)), T{});
        }
    } else {
#pragma unroll
        for (int kk = 0; kk < K / 16; ++kk) {
            const unsigned int a[4] = {pack2(c[2 * kk][0], c[2 * kk][1], T{}), pack2(c[2 * kk][2], c[2 * kk][3], T{}),
                                       pack2(c[2 * kk + 1][0], c[2 * kk + 1][1], T{}),
                                       pack2(c[2 * kk + 1][2], c[2 * kk + 1][3], T{})};
#pragma unroll
            for (int n2 = 0; n2 < D / 16; ++n2) {
                unsigned int b[4];
                ldmatrix_x4_trans(b, bt_address<D>(tile, 16 * kk, 16 * n2));
                mma(acc[2 * n2], a, b[0], b[1], T{});
                mma(acc[2 * n2 + 1], a, b[2], b[3], T{});
            }
        }
    }
}

// ------------------------------------------------------------------ forward
// grid: (ceil(T / 64), B * H), 128 threads; each warp owns 16 query rows and keys stream in
// tiles of BC. Dynamic shared memory: Q (64 rows) | K stages 0, 1 | V stages 0, 1 (BC rows).
template <typename T, int D, int BC>
__global__ void __launch_bounds__(MMA_THREADS, 2)
    attention_mma_forward_kernel(const T* __restrict__ qkv, T* __restrict__ out,
                                 float* __restrict__ lse, int seq_len, int n_heads,
                                 float scale_log2,
                                 const unsigned int* __restrict__ seed_ptr, unsigned int threshold,
                                 float keep_scale) {
    const unsigned int seed = *seed_ptr;  // in device memory: a CUDA graph's replays change it
    constexpr int Q_TILE = BYTES<T> * MMA_ROWS * ROW<T, D>, KV_TILE = BYTES<T> * BC * ROW<T, D>;
    extern __shared__ __align__(16) unsigned short mma_smem[];
    const unsigned int q_tile = shared_address(mma_smem);
    const unsigned int k_tiles = q_tile + Q_TILE, v_tiles = k_tiles + 2 * KV_TILE;

    const int E = n_heads * D, stride = 3 * E;
    const int bh = blockIdx.y, b = bh / n_heads, h = bh % n_heads;
    const int q0 = (gridDim.x - 1 - blockIdx.x) * MMA_ROWS;  // the longest (last) tiles first
    const int warp = threadIdx.x >> 5, g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
    const int row_a = q0 + 16 * warp + g, row_b = row_a + 8;  // this lane's two rows
    const T* base = qkv + (long long)b * seq_len * stride + h * D;
    const int n_tiles = (min(q0 + MMA_ROWS, seq_len) - 1) / BC + 1;  // causal: keys <= last row

    load_tile_async<MMA_ROWS, D>(q_tile, base, q0, seq_len, stride);
    load_tile_async<BC, D>(k_tiles, base + E, 0, seq_len, stride);
    load_tile_async<BC, D>(v_tiles, base + 2 * E, 0, seq_len, stride);
    copies_commit();

    const unsigned int key_a = dropout_row_key(seed, (unsigned int)(bh * seq_len + row_a));
    const unsigned int key_b = dropout_row_key(seed, (unsigned int)(bh * seq_len + row_b));
    OwnRows<T, D> q;
    float o[D / 8][4], m_a = -TC_INF, m_b = -TC_INF, l_a = 0.f, l_b = 0.f;  // l: partial sums
    zero(o);

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
        if (j == 0) q.load(q_tile, 16 * warp);

        float s[BC / 8][4];
        zero(s);
        mma_a_bt<D, BC, T>(s, q, k_tiles + stage * KV_TILE);

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
        mma_c_b<D, BC, T>(o, s, v_tiles + stage * KV_TILE);
        __syncthreads();  // every warp is done with this stage before it is refilled
    }

    const float sum_a = quad_sum(l_a), sum_b = quad_sum(l_b);
    store_rows<D>(out + (long long)b * seq_len * E + h * D, E, o, row_a, seq_len, 1.f / sum_a,
                  1.f / sum_b);
    if (t == 0) {
        if (row_a < seq_len) lse[(long long)bh * seq_len + row_a] = m_a + log2f(sum_a);
        if (row_b < seq_len) lse[(long long)bh * seq_len + row_b] = m_b + log2f(sum_b);
    }
}

// ------------------------------------------------------------------ backward: dQ and Delta
// grid as the forward's: each warp owns 16 query rows, keys stream in tiles of BC.
// Dynamic shared memory: Q | dO (64 rows each) | K stages 0, 1 | V stages 0, 1 (BC rows each).
template <typename T, int D, int BC>
__global__ void __launch_bounds__(MMA_THREADS, 2)
    attention_mma_backward_dq_kernel(const T* __restrict__ qkv, const T* __restrict__ out,
                                     const T* __restrict__ dout, const float* __restrict__ lse,
                                     float* __restrict__ delta, T* __restrict__ dqkv, int seq_len,
                                     int n_heads, float scale_log2, float scale,
                                     const unsigned int* __restrict__ seed_ptr,
                                     unsigned int threshold, float keep_scale) {
    const unsigned int seed = *seed_ptr;  // in device memory: a CUDA graph's replays change it
    constexpr int ROW_TILE = BYTES<T> * MMA_ROWS * ROW<T, D>, KEY_TILE = BYTES<T> * BC * ROW<T, D>;
    extern __shared__ __align__(16) unsigned short mma_smem[];
    const unsigned int q_tile = shared_address(mma_smem), do_tile = q_tile + ROW_TILE;
    const unsigned int k_tiles = q_tile + 2 * ROW_TILE, v_tiles = k_tiles + 2 * KEY_TILE;

    const int E = n_heads * D, stride = 3 * E;
    const int bh = blockIdx.y, b = bh / n_heads, h = bh % n_heads;
    const int q0 = (gridDim.x - 1 - blockIdx.x) * MMA_ROWS;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
    const int row_a = q0 + 16 * warp + g, row_b = row_a + 8;
    const T* base = qkv + (long long)b * seq_len * stride + h * D;
    const long long out_base = (long long)b * seq_len * E + h * D;  // in out and dout
    const long long stat0 = (long long)bh * seq_len;
    const int n_tiles = (min(q0 + MMA_ROWS, seq_len) - 1) / BC + 1;

    load_tile_async<MMA_ROWS, D>(q_tile, base, q0, seq_len, stride);
    load_tile_async<MMA_ROWS, D>(do_tile, dout + out_base, q0, seq_len, E);
    load_tile_async<BC, D>(k_tiles, base + E, 0, seq_len, stride);
    load_tile_async<BC, D>(v_tiles, base + 2 * E, 0, seq_len, stride);
    copies_commit();

    // Delta = rowsum(dO * O) of the warp's 16 rows, a row at a time across the warp's lanes
    float delta_a = 0.f, delta_b = 0.f;
#pragma unroll
    for (int r = 0; r < 16; ++r) {
        const int row = q0 + 16 * warp + r;
        float v = 0.f;
        if (row < seq_len) {
            const T* o_row = out + out_base + (long long)row * E;
            const T* do_row = dout + out_base + (long long)row * E;
#pragma unroll
            for (int c = 2 * lane; c < D; c += 64) {
                const float2 o2 = load2(o_row + c), d2 = load2(do_row + c);
                v += o2.x * d2.x + o2.y * d2.y;
            }
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

    OwnRows<T, D> q, d_out;
    float dq[D / 8][4];
    zero(dq);

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
            q.load(q_tile, 16 * warp);
            d_out.load(do_tile, 16 * warp);
        }
        const unsigned int k_tile = k_tiles + stage * KEY_TILE;

        float s[BC / 8][4], dp[BC / 8][4];
        zero(s);
        zero(dp);
        mma_a_bt<D, BC, T>(s, q, k_tile);
        mma_a_bt<D, BC, T>(dp, d_out, v_tiles + stage * KEY_TILE);

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
        mma_c_b<D, BC, T>(dq, s, k_tile);
        __syncthreads();
    }
    store_rows<D>(dqkv + (long long)b * seq_len * stride + h * D, stride, dq, row_a, seq_len,
                  scale, scale);
}

// ------------------------------------------------------------------ backward: dK and dV
// grid: (ceil(T / 64), B * H); a block owns 64 keys (16 per warp) and walks the query tiles of
// BQ rows that can see them. Dynamic shared memory: K | V (64 rows each) | Q stages 0, 1 | dO
// stages 0, 1 (BQ rows each); per query tile its lse (+inf past the sequence, so P = 0
// there), Delta and dropout row key in static arrays.

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

template <typename T, int D, int BQ>
__global__ void __launch_bounds__(MMA_THREADS, 2)
    attention_mma_backward_dkv_kernel(const T* __restrict__ qkv, const T* __restrict__ dout,
                                      const float* __restrict__ lse,
                                      const float* __restrict__ delta, T* __restrict__ dqkv,
                                      int seq_len, int n_heads, float scale_log2, float scale,
                                      const unsigned int* __restrict__ seed_ptr,
                                      unsigned int threshold, float keep_scale) {
    const unsigned int seed = *seed_ptr;  // in device memory: a CUDA graph's replays change it
    constexpr int KEY_TILE = BYTES<T> * MMA_ROWS * ROW<T, D>, Q_TILE = BYTES<T> * BQ * ROW<T, D>;
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
    zero(dk);
    zero(dv);

    for (int j = first; j < n_tiles; ++j) {
        const int stage = (j - first) & 1, query0 = j * BQ;
        if (j + 1 < n_tiles) {
            load_tile_async<BQ, D>(q_tiles + (stage ^ 1) * Q_TILE, base, query0 + BQ, seq_len,
                                   stride);
            load_tile_async<BQ, D>(do_tiles + (stage ^ 1) * Q_TILE, dout_base, query0 + BQ,
                                   seq_len, E);
            load_query_stats<BQ>(lse_s[stage ^ 1], delta_s[stage ^ 1], row_key_s[stage ^ 1], lse,
                                 delta, stat0, query0 + BQ, seq_len, seed);
        }
        copies_commit();
        copies_wait_one();
        __syncthreads();
        const unsigned int q_tile = q_tiles + stage * Q_TILE, do_tile = do_tiles + stage * Q_TILE;

        float s[BQ / 8][4], dp[BQ / 8][4];  // S^T and dP^T: rows = keys, columns = queries
        zero(s);
        zero(dp);
        mma_a_bt<D, BQ, T>(s, TileRows{k_tile, 16 * warp}, q_tile);
        mma_a_bt<D, BQ, T>(dp, TileRows{v_tile, 16 * warp}, do_tile);

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
        mma_c_b<D, BQ, T>(dv, s, do_tile);
        mma_c_b<D, BQ, T>(dk, dp, q_tile);
        __syncthreads();
    }
    T* row0 = dqkv + (long long)b * seq_len * stride + h * D;
    store_rows<D>(row0 + E, stride, dk, key_a, seq_len, scale, scale);
    store_rows<D>(row0 + 2 * E, stride, dv, key_a, seq_len, 1.f, 1.f);
}
