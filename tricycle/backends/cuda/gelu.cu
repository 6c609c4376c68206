// gelu.cu: GeLU forward and backward, exact (erf) and tanh forms, elementwise.
//
// Reference: tricycle/activation.py gelu_forward / gelu_backward.
//   exact: gelu(x) = x * Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2,
//          gelu'(x) = Phi(x) + x * exp(-x^2 / 2) / sqrt(2 pi)
//   tanh:  u = sqrt(2 / pi) (x + 0.044715 x^3), t = tanh(u), gelu(x) = x (1 + t) / 2,
//          gelu'(x) = (1 + t) / 2 + x (1 - t^2) sqrt(2 / pi) (1 + 3 * 0.044715 x^2) / 2
// Optionally fused with a bias over the last axis (``has_bias``): z = x + bias[i % cols] is
// formed in registers and never stored; the backward of that form returns dz, from which the
// caller gets dbias as a column sum.
// Grid-stride loops over the flat array: memory bound, one read and one write per element
// (backward: two reads, one write).

#define GELU_SQRT_HALF 0.70710678118654752f
#define GELU_INV_SQRT_2PI 0.39894228040143268f
#define GELU_TANH_SCALE 0.79788456080286536f
#define GELU_TANH_CUBIC 0.044715f

template <bool TANH>
__device__ __forceinline__ float gelu(float x) {
    if constexpr (TANH) {
        const float t = tanhf(GELU_TANH_SCALE * x * (1.f + GELU_TANH_CUBIC * x * x));
        return 0.5f * x * (1.f + t);
    } else {
        return 0.5f * x * (1.f + erff(x * GELU_SQRT_HALF));
    }
}

template <bool TANH>
__device__ __forceinline__ float gelu_grad(float x) {
    if constexpr (TANH) {
        const float x2 = x * x;
        const float t = tanhf(GELU_TANH_SCALE * x * (1.f + GELU_TANH_CUBIC * x2));
        return 0.5f * (1.f + t) +
               0.5f * GELU_TANH_SCALE * x * (1.f - t * t) * (1.f + 3.f * GELU_TANH_CUBIC * x2);
    } else {
        return 0.5f * (1.f + erff(x * GELU_SQRT_HALF)) +
               x * expf(-0.5f * x * x) * GELU_INV_SQRT_2PI;
    }
}

// VEC: four elements per load and store (load_chunk/store_chunk), one bias column index per
// four; the launcher checks that every pointer is aligned to four elements and that the size
// and the row length are multiples of four.
template <int W, typename T>
__device__ __forceinline__ void load_biased(const T* x, const T* bias, int has_bias, int cols,
                                            long long i, float (&v)[W]) {
    load_chunk<W>(x + i, v);
    if (has_bias) {
        float c[W];
        load_chunk<W>(bias + i % cols, c);
#pragma unroll
        for (int j = 0; j < W; ++j) v[j] += c[j];
    }
}

template <typename T, bool TANH, bool VEC>
__global__ void gelu_forward_kernel(const T* __restrict__ x, const T* __restrict__ bias,
                                    int has_bias, int cols, T* __restrict__ y, long long n) {
    constexpr int W = VEC ? 4 : 1;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long start = (long long)blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll 4
    for (long long k = start; k < n / W; k += stride) {
        const long long i = W * k;
        float v[W];
        load_biased<W>(x, bias, has_bias, cols, i, v);
#pragma unroll
        for (int j = 0; j < W; ++j) v[j] = gelu<TANH>(v[j]);
        store_chunk<W>(y + i, v);
    }
}

template <typename T, bool TANH, bool VEC>
__global__ void gelu_backward_kernel(const T* __restrict__ x, const T* __restrict__ bias,
                                     int has_bias, int cols, const T* __restrict__ dy,
                                     T* __restrict__ dx, long long n) {
    constexpr int W = VEC ? 4 : 1;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long start = (long long)blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll 4
    for (long long k = start; k < n / W; k += stride) {
        const long long i = W * k;
        float v[W], g[W];
        load_biased<W>(x, bias, has_bias, cols, i, v);
        load_chunk<W>(dy + i, g);
#pragma unroll
        for (int j = 0; j < W; ++j) g[j] *= gelu_grad<TANH>(v[j]);
        store_chunk<W>(dx + i, g);
    }
}
