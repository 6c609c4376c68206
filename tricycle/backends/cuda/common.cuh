// common.cuh: helpers shared by every kernel file in tricycle/backends/cuda.
//
// The loader (tricycle/backends/cuda/launch.py) prepends this file to each .cu source before
// compiling it with NVRTC through cupy.RawModule, so the sources need no #include at all.
// That is deliberate: NVRTC under CuPy is not guaranteed to find CUDA's own headers
// (cuda_fp16.h, cuda_bf16.h), so the 16-bit float types here are plain 2-byte storage structs,
// converted to and from float32 with single PTX instructions. All arithmetic is in float32.
//
// The strided loops over a row or a flat array carry ``#pragma unroll 4``: their iterations
// are independent loads, and without unrolling each iteration waits for its own load, which
// leaves the row kernels bound by memory latency instead of bandwidth.

#define TC_INF __int_as_float(0x7f800000)
#define TC_FULL_MASK 0xffffffffu

// ------------------------------------------------------------------ 16-bit storage types
struct half_t {
    unsigned short bits;
};
struct bf16_t {
    unsigned short bits;
};

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(half_t v) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.bits));
    return f;
}
// bfloat16 is the top half of a float32: widening is a shift
__device__ __forceinline__ float to_float(bf16_t v) {
    return __uint_as_float(((unsigned int)v.bits) << 16);
}

template <typename T>
__device__ __forceinline__ T from_float(float f);
template <>
__device__ __forceinline__ float from_float<float>(float f) {
    return f;
}
template <>
__device__ __forceinline__ half_t from_float<half_t>(float f) {
    half_t h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
    return h;
}
template <>
__device__ __forceinline__ bf16_t from_float<bf16_t>(float f) {
    bf16_t h;  // round to nearest even (sm_80+), NaN stays NaN
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h.bits) : "f"(f));
    return h;
}

// Four consecutive elements as a float4: one 16-byte load for float, one 8-byte load for the
// 16-bit types. The pointer must be aligned to 4 elements.
__device__ __forceinline__ float4 load4(const float* p) {
    return *reinterpret_cast<const float4*>(p);
}
__device__ __forceinline__ float half_bits_to_float(unsigned int bits) {
    half_t h;
    h.bits = (unsigned short)bits;
    return to_float(h);
}
__device__ __forceinline__ float bf16_bits_to_float(unsigned int bits) {
    return __uint_as_float(bits << 16);
}
__device__ __forceinline__ float4 load4(const half_t* p) {
    const uint2 r = *reinterpret_cast<const uint2*>(p);  // little endian: element 0 is low
    return make_float4(half_bits_to_float(r.x & 0xffffu), half_bits_to_float(r.x >> 16),
                       half_bits_to_float(r.y & 0xffffu), half_bits_to_float(r.y >> 16));
}
__device__ __forceinline__ float4 load4(const bf16_t* p) {
    const uint2 r = *reinterpret_cast<const uint2*>(p);
    return make_float4(bf16_bits_to_float(r.x & 0xffffu), bf16_bits_to_float(r.x >> 16),
                       bf16_bits_to_float(r.y & 0xffffu), bf16_bits_to_float(r.y >> 16));
}

__device__ __forceinline__ void store4(float* p, float a, float b, float c, float d) {
    *reinterpret_cast<float4*>(p) = make_float4(a, b, c, d);
}
template <typename T>
__device__ __forceinline__ void store4(T* p, float a, float b, float c, float d) {
    const unsigned int lo = (unsigned int)from_float<T>(a).bits |
                            ((unsigned int)from_float<T>(b).bits << 16);
    const unsigned int hi = (unsigned int)from_float<T>(c).bits |
                            ((unsigned int)from_float<T>(d).bits << 16);
    *reinterpret_cast<uint2*>(p) = make_uint2(lo, hi);
}

// W consecutive elements as floats: W = 4 is one load4/store4, W = 1 one element. Kernels
// that take a VEC flag loop over chunks of W = VEC ? 4 : 1 and are written once for both.
template <int W, typename T>
__device__ __forceinline__ void load_chunk(const T* p, float (&v)[W]) {
    if constexpr (W == 4) {
        const float4 q = load4(p);
        v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
    } else {
        v[0] = to_float(*p);
    }
}
template <int W, typename T>
__device__ __forceinline__ void store_chunk(T* p, const float (&v)[W]) {
    if constexpr (W == 4) store4(p, v[0], v[1], v[2], v[3]);
    else *p = from_float<T>(v[0]);
}

// ------------------------------------------------------------------ reductions
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(TC_FULL_MASK, v, offset);
    return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1)
        v = fmaxf(v, __shfl_xor_sync(TC_FULL_MASK, v, offset));
    return v;
}

// Block-wide sum/max; every thread gets the result. blockDim.x must be a multiple of 32.
// The leading __syncthreads protects the scratch array from a previous call still reading it.
__device__ __forceinline__ float block_sum(float v) {
    __shared__ float scratch[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x >> 5) ? scratch[lane] : 0.f;
    return warp_sum(v);
}
__device__ __forceinline__ float block_max(float v) {
    __shared__ float scratch[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_max(v);
    __syncthreads();
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x >> 5) ? scratch[lane] : -TC_INF;
    return warp_max(v);
}

// The threads that share one row of a (rows, cols) array: a single warp when rows are short
// (several rows per block, no block barriers at all), or the whole block when they are long.
template <bool WARP>
struct RowGroup {
    int row, tid, size;
    __device__ __forceinline__ RowGroup() {
        if constexpr (WARP) {
            row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
            tid = threadIdx.x & 31;
            size = 32;
        } else {
            row = blockIdx.x;
            tid = threadIdx.x;
            size = blockDim.x;
        }
    }
    __device__ __forceinline__ float sum(float v) const {
        if constexpr (WARP) return warp_sum(v);
        else return block_sum(v);
    }
    __device__ __forceinline__ float max(float v) const {
        if constexpr (WARP) return warp_max(v);
        else return block_max(v);
    }
};

// Online softmax (Milakov & Gimelshein): a running max m and a running sum s of exp(x - m),
// rescaled whenever the max grows, so one read of a row yields both. -inf entries add
// nothing (and never produce -inf - -inf = NaN); NaN entries propagate.
__device__ __forceinline__ void online_add(float& m, float& s, float v) {
    if (v > m) {
        s = s * expf(m - v) + 1.f;
        m = v;
    } else if (v != -TC_INF) {
        s += expf(v - m);
    }
}
// A thread's partial sum s (relative to its own max m) re-expressed relative to the row max.
__device__ __forceinline__ float rescale_sum(float m, float s, float row_max) {
    return m == -TC_INF ? 0.f : s * expf(m - row_max);
}

// ------------------------------------------------------------------ attention dropout mask
// Attention-probability dropout keeps element (row, key) when a counter-based hash of the seed
// and the coordinates clears a threshold: tricycle/dropout_mask.py keep_mask, bit for bit, so
// the attention kernels (attention.cu, attention_mma.cu) and numpy draw the same mask.
// lowbias32 (C. Wellons): the integer hash of tricycle/dropout_mask.py _mix32.
__device__ __forceinline__ unsigned int mix32(unsigned int x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    return x ^ (x >> 16);
}
// Per query row (row = (b * H + h) * T + query), the part of the hash shared by its keys.
__device__ __forceinline__ unsigned int dropout_row_key(unsigned int seed, unsigned int row) {
    return mix32(seed ^ mix32(row));
}
// Inverted-dropout multiplier of element (row, key): 0 or keep_scale; 1 without dropout.
__device__ __forceinline__ float dropout_keep(unsigned int row_key, int key, unsigned int threshold,
                                              float keep_scale) {
    if (threshold == 0u) return 1.f;
    return mix32(row_key ^ ((unsigned int)key * 0x9e3779b9u)) >= threshold ? keep_scale : 0.f;
}
