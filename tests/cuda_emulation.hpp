// A host emulation of the CUDA subset that the tensor-core attention kernels use, so that
// their index arithmetic, fragment layouts and cp.async staging can be checked on a machine
// without a GPU (tests/test_kernels_emulated.py compiles tricycle/backends/cuda/attention_mma.cu
// with g++ after this header).
//
// Every CUDA thread is a lane, a coroutine with a stack of its own (ucontext): a block's
// lanes take turns on one host thread, each running until it waits at a barrier (a thread of
// the system per CUDA thread spent its run switching threads, at every barrier).
// Every other turn goes through the lanes in reverse, so that where one thread reads what
// another stores with no barrier between them, the read comes first in some turns. Blocks
// run one after another; __syncthreads is a barrier of the block and warp collectives
// (shuffles, mma) exchange values through per-warp slots between two barriers of the warp.
// Inline PTX is compiled out (``asm`` expands to nothing), and the PTX wrappers the kernels
// call are defined here instead, from the PTX ISA: cvt.rna.tf32.f32 and cvt.rn.bf16x2.f32 /
// cvt.rn.f16x2.f32, mma.m16n8k8 with TF32 operands and mma.m16n8k16 with 16-bit ones (their
// fragment layouts), ldmatrix.x4 (with .trans), ld.shared, and cp.async, whose copies land
// either at issue or as late as their wait allows (EAGER), so that a read before the wait or a
// tile refilled while another warp reads it shows up. Shared memory starts as NaN bytes
// before each block.
#include <sys/mman.h>
#include <ucontext.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <vector>

struct bf16_t;  // common.cuh's 16-bit storage types, defined after this header
struct half_t;

using std::max;
using std::min;

struct dim3 {
    unsigned x = 0, y = 0, z = 0;
};
dim3 threadIdx, blockIdx;  // the running lane's
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
static uint64_t warp_slots[32][32][8];  // [warp][lane][value]: what a collective exchanges
static int emulation_errors = 0;

struct Copy {
    unsigned dst;
    const void* src;
    bool valid;
};
class Barrier;
struct Lane {
    ucontext_t context;
    dim3 thread;
    std::vector<std::vector<Copy>> committed;  // its cp.async groups in flight
    std::vector<Copy> open_group;
    const Barrier* waits = nullptr;  // the barrier it waits at, from its generation on
    unsigned long generation = 0;
    bool done = false;
    bool runnable() const;
};
static Lane* lane;              // the one running
static ucontext_t turns;        // where a lane that waits returns to (``launch``)
static unsigned long arrivals;  // at barriers, and lanes ended: a round without any: deadlock

class Barrier {  // std::barrier's arrive_and_wait, for lanes
   public:
    explicit Barrier(unsigned count) : count_(count) {}
    void arrive_and_wait() {
        ++arrivals;
        if (++arrived_ < count_) {
            lane->waits = this;
            lane->generation = generation_;
            while (generation_ == lane->generation) swapcontext(&lane->context, &turns);
            lane->waits = nullptr;
        } else {
            arrived_ = 0;
            ++generation_;
        }
    }
    unsigned long generation() const { return generation_; }

   private:
    const unsigned count_;
    unsigned arrived_ = 0;
    unsigned long generation_ = 0;
};
inline bool Lane::runnable() const {
    return !done && (waits == nullptr || waits->generation() != generation);
}
static Barrier* block_barrier;
static Barrier* warp_barriers[32];

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

static bool EAGER = false;

inline void land(const Copy& c) {
    if (c.valid) memcpy((char*)mma_smem + c.dst, c.src, 16);
    else memset((char*)mma_smem + c.dst, 0, 16);  // src-size 0: zeros
}
inline void copy16_async(unsigned int dst, const void* src, bool valid) {
    if (dst % 16 || (valid && (uintptr_t)src % 16)) fail("cp.async address not 16-byte aligned");
    const Copy c{dst, src, valid};
    if (EAGER) land(c);
    else lane->open_group.push_back(c);
}
inline void copies_commit() {
    lane->committed.push_back(lane->open_group);
    lane->open_group.clear();
}
inline void copies_wait_one() {  // cp.async.wait_group 1
    std::vector<std::vector<Copy>>& committed = lane->committed;
    while (committed.size() > 1) {
        for (const Copy& c : committed.front()) land(c);
        committed.erase(committed.begin());
    }
}

// ld.shared.b32
inline unsigned int shared_load(unsigned int address) {
    if (address % 4) fail("ld.shared address not 4-byte aligned");
    unsigned int v;
    memcpy(&v, (const char*)mma_smem + address, 4);
    return v;
}

// cvt.rna.tf32.f32: round to nearest (ties away from zero) to 10 mantissa bits
inline unsigned int tf32(float f) { return (__float_as_uint(f) + 0x1000u) & 0xffffe000u; }

// a 16-bit storage type's bits as a float, and a float rounded to them (to nearest, ties even)
template <typename T>
float bits16_to_float(unsigned int bits) {
    if constexpr (std::is_same_v<T, bf16_t>) return __uint_as_float(bits << 16);
    _Float16 h;
    const uint16_t b = bits;
    memcpy(&h, &b, 2);
    return (float)h;
}
template <typename T>
unsigned int float_to_bits16(float f) {
    if constexpr (std::is_same_v<T, bf16_t>) {
        const unsigned int u = __float_as_uint(f);
        if (std::isnan(f)) return (u >> 16) | 0x40u;
        return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    }
    const _Float16 h = (_Float16)f;
    uint16_t b;
    memcpy(&b, &h, 2);
    return b;
}
// cvt.rn.bf16x2.f32 / cvt.rn.f16x2.f32: lo in the lower half
template <typename T>
unsigned int pack2(float lo, float hi, T) {
    return float_to_bits16<T>(lo) | float_to_bits16<T>(hi) << 16;
}

// ldmatrix.sync.aligned.m8n8.x4(.trans).shared.b16: lanes 8j .. 8j + 7 give the row addresses
// of matrix j; lane 4 g + t receives row g, columns 2t and 2t + 1 of each (.trans: column g,
// rows 2t and 2t + 1), the lower index in the lower half
inline void ldmatrix(unsigned int (&r)[4], unsigned int address, bool trans) {
    const int w = warp_id(), l = lane_id(), g = l >> 2, t = l & 3;
    if (address % 16) fail("ldmatrix row address not 16-byte aligned");
    warp_slots[w][l][0] = address;
    warp_sync();
    const char* smem = (const char*)mma_smem;
    for (int j = 0; j < 4; ++j) {
        if (!trans) {
            memcpy(&r[j], smem + warp_slots[w][8 * j + g][0] + 4 * t, 4);
        } else {
            uint16_t lo, hi;
            memcpy(&lo, smem + warp_slots[w][8 * j + 2 * t][0] + 2 * g, 2);
            memcpy(&hi, smem + warp_slots[w][8 * j + 2 * t + 1][0] + 2 * g, 2);
            r[j] = lo | (unsigned int)hi << 16;
        }
    }
    warp_sync();
}
inline void ldmatrix_x4(unsigned int (&r)[4], unsigned int address) { ldmatrix(r, address, false); }
inline void ldmatrix_x4_trans(unsigned int (&r)[4], unsigned int address) { ldmatrix(r, address, true); }

// mma.sync.aligned: c += a b, the storage type picks the instruction, lane = 4 g + t.
// m16n8k8 with TF32 operands (float):
//   A a0 (g, t), a1 (g+8, t), a2 (g, t+4), a3 (g+8, t+4); B b0 (k t, n g), b1 (k t+4, n g)
// m16n8k16 with 16-bit operands, two to a register (lower index in the lower half):
//   A a0 (g, 2t..2t+1), a1 (g+8, 2t..), a2 (g, 2t+8..), a3 (g+8, 2t+8..);
//   B b0 (k 2t..2t+1, n g), b1 (k 2t+8.., n g)
// C c0 c1 (g, 2t..2t+1), c2 c3 (g+8, 2t..2t+1) for both
template <typename T>
void mma(float (&c)[4], const unsigned int (&a)[4], unsigned int b0, unsigned int b1, T) {
    constexpr bool TF32 = std::is_same_v<T, float>;
    constexpr int K = TF32 ? 8 : 16;
    const int w = warp_id(), l = lane_id();
    uint64_t* mine = warp_slots[w][l];
    const unsigned int operands[6] = {a[0], a[1], a[2], a[3], b0, b1};
    for (int i = 0; i < 6; ++i) {
        if (TF32 && (operands[i] & 0x1fffu)) fail("mma operand not rounded to TF32 (cvt.rna missing)");
        mine[i] = operands[i];
    }
    warp_sync();
    float A[16][16], B[16][8];
    for (int lane = 0; lane < 32; ++lane) {
        const int g = lane >> 2, t = lane & 3;
        const uint64_t* r = warp_slots[w][lane];
        if constexpr (TF32) {
            A[g][t] = __uint_as_float(r[0]);
            A[g + 8][t] = __uint_as_float(r[1]);
            A[g][t + 4] = __uint_as_float(r[2]);
            A[g + 8][t + 4] = __uint_as_float(r[3]);
            B[t][g] = __uint_as_float(r[4]);
            B[t + 4][g] = __uint_as_float(r[5]);
        } else {
            const int rows[4] = {g, g + 8, g, g + 8}, cols[4] = {2 * t, 2 * t, 2 * t + 8, 2 * t + 8};
            for (int i = 0; i < 4; ++i)
                for (int h = 0; h < 2; ++h)
                    A[rows[i]][cols[i] + h] = bits16_to_float<T>((unsigned int)(r[i] >> (16 * h)) & 0xffffu);
            for (int i = 0; i < 2; ++i)
                for (int h = 0; h < 2; ++h)
                    B[2 * t + 8 * i + h][g] = bits16_to_float<T>((unsigned int)(r[4 + i] >> (16 * h)) & 0xffffu);
        }
    }
    warp_sync();
    const int g = l >> 2, t = l & 3;
    for (int i = 0; i < 4; ++i) {
        const int row = i < 2 ? g : g + 8, col = 2 * t + (i & 1);
        double sum = 0;
        for (int k = 0; k < K; ++k) sum += (double)A[row][k] * B[k][col];
        c[i] += (float)sum;
    }
}

// ------------------------------------------------------------------ launching
constexpr size_t LANE_STACK = 1 << 20, GUARD = 1 << 12;  // a page below: an overflow faults

template <typename Body>
void launch(dim3 grid, unsigned threads, Body body) {
    gridDim = grid;
    blockDim = {threads, 1, 1};
    static Body* running;  // for ``start``, which makecontext gives no pointer
    running = &body;
    const size_t span = LANE_STACK + GUARD;
    char* stacks = (char*)mmap(nullptr, threads * span, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (stacks == MAP_FAILED) {
        fail("no memory for the lanes' stacks");
        exit(1);
    }
    for (unsigned t = 0; t < threads; ++t) mprotect(stacks + t * span, GUARD, PROT_NONE);
    void (*start)() = [] {
        (*running)();
        if (!lane->open_group.empty()) fail("cp.async copies never committed");
        lane->done = true;
        ++arrivals;
    };  // returns to ``turns`` (uc_link)
    for (unsigned by = 0; by < grid.y; ++by)
        for (unsigned bx = 0; bx < grid.x; ++bx) {
            memset(mma_smem, 0xff, sizeof(mma_smem));  // NaN: a read before a write shows
            blockIdx = {bx, by, 0};
            Barrier block(threads);
            block_barrier = &block;
            for (unsigned w = 0; w < threads / 32; ++w) warp_barriers[w] = new Barrier(32);
            std::vector<Lane> lanes(threads);
            for (unsigned t = 0; t < threads; ++t) {
                Lane& l = lanes[t];
                l.thread = {t, 0, 0};
                getcontext(&l.context);
                l.context.uc_stack = {stacks + t * span + GUARD, 0, LANE_STACK};
                l.context.uc_link = &turns;
                makecontext(&l.context, start, 0);
            }
            // a warp at a time runs until each of its lanes waits at the block's barrier (or
            // has ended): warps drift as far apart as the block's barriers let them
            const unsigned warps = (threads + 31) / 32;
            for (unsigned round = 0, left = threads; left; ++round) {
                const bool reverse = round % 2;
                const unsigned long before = arrivals;
                for (unsigned k = 0; k < warps; ++k) {
                    const unsigned first = 32 * (reverse ? warps - 1 - k : k);
                    const unsigned width = min(32u, threads - first);
                    for (bool ran = true; ran;) {
                        ran = false;
                        for (unsigned i = 0; i < width; ++i) {
                            lane = &lanes[first + (reverse ? width - 1 - i : i)];
                            if (!lane->runnable()) continue;
                            threadIdx = lane->thread;
                            swapcontext(&turns, &lane->context);
                            left -= lane->done;
                            ran = true;
                        }
                    }
                }
                if (left && arrivals == before) {
                    fail("deadlock: every thread waits at a barrier");
                    exit(1);
                }
            }
            for (unsigned w = 0; w < threads / 32; ++w) delete warp_barriers[w];
        }
    munmap(stacks, threads * span);
}
