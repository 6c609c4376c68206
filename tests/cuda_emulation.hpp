// A host emulation of the CUDA subset that the TF32 attention kernels use, so that their
// index arithmetic, fragment layouts and cp.async staging can be checked on a machine without
// a GPU (tests/test_kernels_emulated.py compiles tricycle/backends/cuda/attention_mma.cu with g++
// after this header).
//
// Every CUDA thread is a std::thread; blocks run one after another; __syncthreads is a
// barrier of the block and warp collectives (shuffles, mma) exchange values through per-warp
// slots between two barriers of the warp. Inline PTX is compiled out (``asm`` expands to
// nothing), and the PTX wrappers the TF32 kernels call are defined here instead, from the
// PTX ISA: cvt.rna.tf32.f32, mma.m16n8k8 with TF32 operands (its fragment layouts), and
// cp.async, whose copies land either at issue or as late as their wait allows (EAGER), so
// that a read before the wait or a tile refilled while another warp reads it shows up.
// Shared memory starts as NaN bytes before each block.
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

using std::max;
using std::min;

struct dim3 {
    unsigned x = 0, y = 0, z = 0;
};
thread_local dim3 threadIdx, blockIdx;
dim3 gridDim, blockDim;
struct float2 {
    float x, y;
};
inline float2 make_float2(float a, float b) { return {a, b}; }
struct float4 {
    float x, y, z, w;
};
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
struct uint2 {
    unsigned x, y;
};
inline uint2 make_uint2(unsigned a, unsigned b) { return {a, b}; }
inline float __int_as_float(int i) {
    float f;
    memcpy(&f, &i, 4);
    return f;
}
inline float __uint_as_float(unsigned i) {
    float f;
    memcpy(&f, &i, 4);
    return f;
}
inline unsigned __float_as_uint(float f) {
    unsigned i;
    memcpy(&i, &f, 4);
    return i;
}

#define __global__
#define __device__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __shared__ static  // one block at a time: a static is the block's shared memory
#define asm(...) ((void)0)

alignas(16) static unsigned short mma_smem[1 << 18];  // the dynamic shared memory
static std::barrier<>* block_barrier;
static std::barrier<>* warp_barriers[32];
static uint64_t warp_slots[32][32][8];  // [warp][lane][value]: what a collective exchanges
static int emulation_errors = 0;

inline int lane_id() { return threadIdx.x & 31; }
inline int warp_id() { return threadIdx.x >> 5; }
inline void warp_sync() { warp_barriers[warp_id()]->arrive_and_wait(); }
inline void __syncthreads() { block_barrier->arrive_and_wait(); }
inline void fail(const char* what) {
    fprintf(stderr, "emulation: %s\n", what);
    emulation_errors++;
}

template <typename V>
V __shfl_xor_sync(unsigned, V v, int offset) {
    static_assert(sizeof(V) <= 8, "");
    uint64_t bits = 0;
    memcpy(&bits, &v, sizeof(V));
    warp_slots[warp_id()][lane_id()][0] = bits;
    warp_sync();
    const uint64_t other = warp_slots[warp_id()][lane_id() ^ offset][0];
    warp_sync();
    V r;
    memcpy(&r, &other, sizeof(V));
    return r;
}

// ------------------------------------------------------------------ the PTX wrappers
inline unsigned int shared_address(const void* p) {
    return (unsigned int)((const char*)p - (const char*)mma_smem);
}

struct Copy {
    unsigned dst;
    const void* src;
    bool valid;
};
thread_local std::vector<std::vector<Copy>> committed;  // this thread's groups in flight
thread_local std::vector<Copy> open_group;
static bool EAGER = false;

inline void land(const Copy& c) {
    if (c.valid) memcpy((char*)mma_smem + c.dst, c.src, 16);
    else memset((char*)mma_smem + c.dst, 0, 16);  // src-size 0: zeros
}
inline void copy16_async(unsigned int dst, const void* src, bool valid) {
    if (dst % 16 || (valid && (uintptr_t)src % 16)) fail("cp.async address not 16-byte aligned");
    const Copy c{dst, src, valid};
    if (EAGER) land(c);
    else open_group.push_back(c);
}
inline void copies_commit() {
    committed.push_back(open_group);
    open_group.clear();
}
inline void copies_wait_one() {  // cp.async.wait_group 1
    while (committed.size() > 1) {
        for (const Copy& c : committed.front()) land(c);
        committed.erase(committed.begin());
    }
}

// cvt.rna.tf32.f32: round to nearest (ties away from zero) to 10 mantissa bits
inline unsigned int tf32(float f) { return (__float_as_uint(f) + 0x1000u) & 0xffffe000u; }

// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32, lane = 4 g + t:
// A a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4); B b0 (k t, n g), b1 (k t+4, n g);
// C c0 c1 (g, 2t..2t+1), c2 c3 (g+8, 2t..2t+1)
inline void mma_tf32(float (&c)[4], const unsigned int (&a)[4], unsigned int b0, unsigned int b1) {
    const int w = warp_id(), l = lane_id();
    uint64_t* mine = warp_slots[w][l];
    const unsigned int operands[6] = {a[0], a[1], a[2], a[3], b0, b1};
    for (int i = 0; i < 6; ++i) {
        if (operands[i] & 0x1fffu) fail("mma operand not rounded to TF32 (cvt.rna missing)");
        mine[i] = operands[i];
    }
    warp_sync();
    float A[16][8], B[8][8];
    for (int lane = 0; lane < 32; ++lane) {
        const int g = lane >> 2, t = lane & 3;
        const uint64_t* r = warp_slots[w][lane];
        A[g][t] = __uint_as_float(r[0]);
        A[g + 8][t] = __uint_as_float(r[1]);
        A[g][t + 4] = __uint_as_float(r[2]);
        A[g + 8][t + 4] = __uint_as_float(r[3]);
        B[t][g] = __uint_as_float(r[4]);
        B[t + 4][g] = __uint_as_float(r[5]);
    }
    warp_sync();
    const int g = l >> 2, t = l & 3;
    for (int i = 0; i < 4; ++i) {
        const int row = i < 2 ? g : g + 8, col = 2 * t + (i & 1);
        double sum = 0;
        for (int k = 0; k < 8; ++k) sum += (double)A[row][k] * B[k][col];
        c[i] += (float)sum;
    }
}

// ------------------------------------------------------------------ launching
template <typename Body>
void launch(dim3 grid, unsigned threads, Body body) {
    gridDim = grid;
    blockDim = {threads, 1, 1};
    for (unsigned by = 0; by < grid.y; ++by)
        for (unsigned bx = 0; bx < grid.x; ++bx) {
            memset(mma_smem, 0xff, sizeof(mma_smem));  // NaN: a read before a write shows
            std::barrier<> block(threads);
            block_barrier = &block;
            for (unsigned w = 0; w < threads / 32; ++w) warp_barriers[w] = new std::barrier<>(32);
            std::vector<std::thread> lanes;
            for (unsigned tid = 0; tid < threads; ++tid)
                lanes.emplace_back([&, tid] {
                    threadIdx = {tid, 0, 0};
                    blockIdx = {bx, by, 0};
                    committed.clear();
                    open_group.clear();
                    body();
                    if (!open_group.empty()) fail("cp.async copies never committed");
                });
            for (std::thread& lane : lanes) lane.join();
            for (unsigned w = 0; w < threads / 32; ++w) delete warp_barriers[w];
        }
}
