// adamw.cu: fused AdamW update, global gradient norm, and the clip/unscale multiplier.
//
// Reference: tricycle/optimisers.py (_adam_update, AdamW.update_parameter), which follows
// torch.optim.AdamW:
//     w *= 1 - lr * weight_decay                        (decoupled decay; 0 for Adam)
//     m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
//     w -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps)
// One kernel pass reads w, g, m, v and writes w, m, v (28 bytes per float32 parameter), instead
// of the ~10 elementwise launches of the array version.
//
// ``grad_mult`` (optional, device memory) multiplies every gradient before use: it carries
// gradient unscaling (1 / loss scale) and clipping (max_norm / norm) without a host round
// trip. A non-finite multiplier means "overflow: skip this step", and the kernel leaves
// w, m and v untouched.
//
// The multi-tensor forms update many parameters in one launch: block b works on chunk b of
// the concatenation, looked up in small device tables (block -> tensor, offset); the tensors'
// addresses come from a device array of pointers, so the parameters need not share a buffer.

// rest1 and rest2 are 1 - b1 and 1 - b2 taken on the host in float64, as torch takes them:
// float32's 1 - 0.999f is 0.00099998713, not 0.001f.
__device__ __forceinline__ void adamw_element(float* w, const float* g, float* m, float* v,
                                              long long i, float gm, float decay, float beta1,
                                              float beta2, float rest1, float rest2, float eps,
                                              float step_size, float inv_sqrt_bc2) {
    const float grad = g[i] * gm;
    const float mi = beta1 * m[i] + rest1 * grad;
    const float vi = beta2 * v[i] + rest2 * grad * grad;
    m[i] = mi;
    v[i] = vi;
    w[i] = w[i] * decay - step_size * mi / (sqrtf(vi) * inv_sqrt_bc2 + eps);
}

// One tensor. decay = 1 - lr * weight_decay, rest1 = 1 - b1, rest2 = 1 - b2,
// step_size = lr / (1 - b1^t), inv_sqrt_bc2 = 1 / sqrt(1 - b2^t), all computed on the host in
// float64.
extern "C" __global__ void adamw_kernel(float* __restrict__ w, const float* __restrict__ g,
                                        float* __restrict__ m, float* __restrict__ v, long long n,
                                        float decay, float beta1, float beta2, float rest1,
                                        float rest2, float eps, float step_size,
                                        float inv_sqrt_bc2,
                                        const float* __restrict__ grad_mult, int has_mult) {
    const float gm = has_mult ? grad_mult[0] : 1.f;
    if (!isfinite(gm)) return;  // overflow in the scaled gradients: skip the step
    const long long stride = (long long)gridDim.x * blockDim.x;
#pragma unroll 4
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        adamw_element(w, g, m, v, i, gm, decay, beta1, beta2, rest1, rest2, eps, step_size,
                      inv_sqrt_bc2);
}

// Many tensors. ptrs holds 4 * n_tensors addresses: weights | grads | exp_avgs | exp_avg_sqs.
// weight_decays[t] is per tensor (biases and gains are usually not decayed); the tables stay
// the same from step to step while lr follows its schedule. The step's numbers are read from
// device memory, hyper = (lr, beta1, beta2, eps, step_size, inv_sqrt_bc2, rest1, rest2), so
// that a CUDA
// graph replaying this launch reads each step's own (capture.py: step_scalars).
extern "C" __global__ void adamw_multi_kernel(
    const long long* __restrict__ ptrs, const long long* __restrict__ sizes,
    const float* __restrict__ weight_decays, const int* __restrict__ block_tensor,
    const long long* __restrict__ block_start, int n_tensors, int chunk,
    const float* __restrict__ hyper, const float* __restrict__ grad_mult, int has_mult) {
    const float gm = has_mult ? grad_mult[0] : 1.f;
    if (!isfinite(gm)) return;
    const float lr = hyper[0], beta1 = hyper[1], beta2 = hyper[2], eps = hyper[3];
    const float step_size = hyper[4], inv_sqrt_bc2 = hyper[5], rest1 = hyper[6], rest2 = hyper[7];
    const int t = block_tensor[blockIdx.x];
    const long long start = block_start[blockIdx.x];
    const long long end = min(start + (long long)chunk, sizes[t]);
    float* w = reinterpret_cast<float*>(ptrs[t]);
    const float* g = reinterpret_cast<const float*>(ptrs[n_tensors + t]);
    float* m = reinterpret_cast<float*>(ptrs[2 * n_tensors + t]);
    float* v = reinterpret_cast<float*>(ptrs[3 * n_tensors + t]);
    const float decay = 1.f - lr * weight_decays[t];
    for (long long i = start + threadIdx.x; i < end; i += blockDim.x)
        adamw_element(w, g, m, v, i, gm, decay, beta1, beta2, rest1, rest2, eps, step_size,
                      inv_sqrt_bc2);
}

// Sum of squares of many float32 tensors, one partial per block (same block tables as above,
// ptrs holding only the n_tensors gradient addresses).
extern "C" __global__ void sumsq_multi_kernel(const long long* __restrict__ ptrs,
                                              const long long* __restrict__ sizes,
                                              const int* __restrict__ block_tensor,
                                              const long long* __restrict__ block_start,
                                              int chunk, float* __restrict__ partial) {
    const int t = block_tensor[blockIdx.x];
    const long long start = block_start[blockIdx.x];
    const long long end = min(start + (long long)chunk, sizes[t]);
    const float* g = reinterpret_cast<const float*>(ptrs[t]);
    float acc = 0.f;
    for (long long i = start + threadIdx.x; i < end; i += blockDim.x) acc += g[i] * g[i];
    acc = block_sum(acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = acc;
}

// One block. With s the loss scale (read from device memory; 1 when has_scale is 0):
// norm = sqrt(sum partial) / s, the norm of the unscaled gradients;
// grad_mult = min(1, max_norm / (norm + 1e-6)) / s (no clipping when max_norm <= 0),
// or NaN when the norm is not finite, which makes the AdamW kernels skip the step.
extern "C" __global__ void clip_multiplier_kernel(const float* __restrict__ partial, int n_parts,
                                                  float max_norm,
                                                  const float* __restrict__ loss_scale,
                                                  int has_scale, float* __restrict__ norm_out,
                                                  float* __restrict__ mult_out) {
    float acc = 0.f;
    for (int i = threadIdx.x; i < n_parts; i += blockDim.x) acc += partial[i];
    acc = block_sum(acc);
    if (threadIdx.x == 0) {
        const float inv_scale = has_scale ? 1.f / loss_scale[0] : 1.f;
        const float norm = sqrtf(acc) * inv_scale;
        const float clip = max_norm > 0.f ? fminf(1.f, max_norm / (norm + 1e-6f)) : 1.f;
        norm_out[0] = norm;
        mult_out[0] = isfinite(norm) ? inv_scale * clip : __int_as_float(0x7fffffff);
    }
}
