// extremes.cu: fold the smallest and largest of many integer ids into a persistent pair.
//
// Reference: tricycle/ranges.py fold_extremes. A deferred range check (an embedding's ids,
// a cross-entropy's labels) keeps one (min, max) pair of int64 per check site in device
// memory; this kernel lowers the pair's min and raises its max by the ids it is given,
// skipping the ignored id, and returns without the host ever waiting. The host reads all the
// pairs back at its next synchronisation (deferred.raise_pending_errors).
// Each thread folds a grid-strided slice, each warp reduces by shuffles, and lane 0 of each
// warp applies two 64-bit atomics (sm_35+): a few hundred atomics for a batch of ids.

#define TC_INT64_MAX 0x7fffffffffffffffLL
#define TC_INT64_MIN (-TC_INT64_MAX - 1LL)

template <typename I>
__global__ void fold_extremes_kernel(const I* __restrict__ ids, long long n, long long ignore,
                                     int has_ignore, long long* __restrict__ pairs,
                                     int row) {
    long long* pair = pairs + 2LL * row;
    long long low = TC_INT64_MAX, high = TC_INT64_MIN;
    const long long stride = (long long)gridDim.x * blockDim.x;
#pragma unroll 4
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        const long long id = (long long)ids[i];
        if (has_ignore && id == ignore) continue;
        low = id < low ? id : low;
        high = id > high ? id : high;
    }
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        const long long other_low = __shfl_xor_sync(TC_FULL_MASK, low, offset);
        const long long other_high = __shfl_xor_sync(TC_FULL_MASK, high, offset);
        low = other_low < low ? other_low : low;
        high = other_high > high ? other_high : high;
    }
    if ((threadIdx.x & 31) == 0 && low <= high) {  // low > high: this warp saw no counted id
        atomicMin(pair, low);
        atomicMax(pair + 1, high);
    }
}
