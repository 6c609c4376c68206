// embedding.cu: backward of an embedding lookup, dW[ids[n], :] += dout[n, :], deterministic.
//
// Reference: tricycle/layers.py embedding(), whose back_fn is xp.add.at.
// Two kernels. first_occurrence: first[id] = the smallest token index holding id (an integer
// atomicMin: its result does not depend on the order the atomics land in). Then a warp per
// token; only the warp of an id's first token works: it walks the later tokens in order and
// adds the rows holding its id into dW[id], lane e taking columns e, e + 32, ... So every row
// of dW is written by one warp, summed in token order: the same bits on every run (float
// atomics would add in whatever order they land). The walk reads 32 ids per step, one per
// lane, and a ballot says which of them hold the id (a walk of one id per step costs
// O(tokens x distinct ids) reads: benchmarks/README.md, "The third sitting", has the numbers).
// dW is float32 (zeroed by the caller) whatever the type of dout: it is a master-weight gradient.
// An id outside [0, vocab) adds nothing: the range check that reports it may be deferred
// (deferred.py), so the kernels may see one, and must never write outside dW.

template <typename I>
__global__ void first_occurrence_kernel(const I* __restrict__ ids, int* __restrict__ first,
                                        int n_tokens, long long vocab) {
    const int token = blockIdx.x * blockDim.x + threadIdx.x;
    if (token >= n_tokens) return;
    const long long id = (long long)ids[token];
    if (id < 0 || id >= vocab) return;
    atomicMin(first + id, token);
}

template <typename T, typename I>
__global__ void embedding_backward_kernel(const T* __restrict__ dout, const I* __restrict__ ids,
                                          const int* __restrict__ first,
                                          float* __restrict__ dweights, int n_tokens, int dim,
                                          long long vocab) {
    const int token = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (token >= n_tokens) return;
    const long long id = (long long)ids[token];
    if (id < 0 || id >= vocab || first[id] != token) return;  // the same for the whole warp
    const int lane = threadIdx.x & 31;
    float* dst = dweights + id * dim;
    for (int base = token; base < n_tokens; base += 32) {  // 32 ids per step, one per lane
        const int m = base + lane;
        unsigned hits = __ballot_sync(0xffffffffu, m < n_tokens && (long long)ids[m] == id);
        while (hits) {  // the matching tokens, lowest first: token order
            const int k = __ffs(hits) - 1;
            hits &= hits - 1;
            const T* src = dout + (long long)(base + k) * dim;
            for (int e = lane; e < dim; e += 32) dst[e] += to_float(src[e]);
        }
    }
}
