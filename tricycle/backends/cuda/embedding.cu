// embedding.cu: backward of an embedding lookup, dW[ids[n], :] += dout[n, :].
//
// Reference: tricycle/layers.py embedding(), whose back_fn is xp.add.at.
// A warp per token row; lane e adds column e, e + 32, ... with a float atomicAdd, so a warp's
// atomics hit 32 consecutive addresses and coalesce in L2. No sort is needed: rows that many
// tokens share (a small vocabulary) contend on the same addresses, which the L2 atomic units
// serialise; the floating-point summation order is therefore not deterministic.
// dW is float32 (zeroed by the caller) whatever the type of dout: it is a master-weight gradient.
// An id outside [0, vocab) adds nothing: the range check that reports it may be deferred
// (tricycle/deferred.py), so the kernel may see one, and must never write outside dW.

template <typename T, typename I>
__global__ void embedding_backward_kernel(const T* __restrict__ dout, const I* __restrict__ ids,
                                          float* __restrict__ dweights, int n_tokens, int dim,
                                          long long vocab) {
    const int token = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (token >= n_tokens) return;
    const long long id = (long long)ids[token];
    if (id < 0 || id >= vocab) return;
    const int lane = threadIdx.x & 31;
    const T* src = dout + (long long)token * dim;
    float* dst = dweights + id * dim;
    for (int e = lane; e < dim; e += 32) atomicAdd(dst + e, to_float(src[e]));
}
