// cross_entropy.cu: softmax cross-entropy of (rows, cols) logits against integer labels.
//
// Reference: tricycle/loss.py cross_entropy_forward / cross_entropy_backward.
// The softmax is never stored. The forward makes one pass over the logits (online max and
// sum of exponentials) and keeps two floats per row: the row max ``peak`` and
// log_sum = log(sum(exp(logits - peak))), apart rather than added into one log-sum-exp so
// that huge logits keep their precision (as the reference does). The loss of a row is
// log_sum - (logits[label] - peak). The backward makes one more pass and writes
//     dlogits = dloss / count * (exp(logits - peak - log_sum) - onehot(label))
// straight into the output, zero on ignored rows. dloss and count are read from device
// memory, so nothing waits for the host.
// L is the label type (int or long long). A label outside [0, cols) that is not ignored
// makes that row's loss NaN (the kernel cannot raise; the NaN reaches the loss).

template <typename L>
__device__ __forceinline__ bool counted(L label, long long ignore_index, int has_ignore) {
    return !(has_ignore && (long long)label == ignore_index);
}

// VEC: four logits per load (load4) and four gradients per store (store4); the launcher
// checks that the row length is a multiple of four and the arrays are aligned to four.
template <typename T, typename L, bool WARP, bool VEC>
__global__ void ce_forward_kernel(const T* __restrict__ logits, const L* __restrict__ labels,
                                  float* __restrict__ peak_out, float* __restrict__ log_sum_out,
                                  float* __restrict__ row_loss, int rows, int cols,
                                  long long ignore_index, int has_ignore) {
    const RowGroup<WARP> g;
    if (g.row >= rows) return;
    const T* lr = logits + (long long)g.row * cols;

    float row_max, log_sum;
    if constexpr (VEC) {  // four running (max, sum) pairs, one per lane: four independent chains
        float m[4] = {-TC_INF, -TC_INF, -TC_INF, -TC_INF}, s[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll 2
        for (int c = 4 * g.tid; c < cols; c += 4 * g.size) {
            const float4 v = load4(lr + c);
            online_add(m[0], s[0], v.x);
            online_add(m[1], s[1], v.y);
            online_add(m[2], s[2], v.z);
            online_add(m[3], s[3], v.w);
        }
        row_max = g.max(fmaxf(fmaxf(m[0], m[1]), fmaxf(m[2], m[3])));
        log_sum = logf(g.sum(rescale_sum(m[0], s[0], row_max) + rescale_sum(m[1], s[1], row_max) +
                             rescale_sum(m[2], s[2], row_max) + rescale_sum(m[3], s[3], row_max)));
    } else {
        float m = -TC_INF, s = 0.f;
#pragma unroll 4
        for (int c = g.tid; c < cols; c += g.size) online_add(m, s, to_float(lr[c]));
        row_max = g.max(m);
        log_sum = logf(g.sum(rescale_sum(m, s, row_max)));
    }

    if (g.tid == 0) {
        const L label = labels[g.row];
        float loss = 0.f;
        if (counted(label, ignore_index, has_ignore)) {
            loss = (label >= 0 && (long long)label < cols)
                       ? log_sum - (to_float(lr[label]) - row_max)
                       : __int_as_float(0x7fffffff);
        }
        peak_out[g.row] = row_max;
        log_sum_out[g.row] = log_sum;
        row_loss[g.row] = loss;
    }
}

// One block: loss = sum(row_loss) / max(count, 1) and count = number of counted rows.
// Fixed per-thread striding and a tree reduction: deterministic.
template <typename L>
__global__ void ce_reduce_kernel(const float* __restrict__ row_loss, const L* __restrict__ labels,
                                 int rows, long long ignore_index, int has_ignore,
                                 float* __restrict__ loss_out, float* __restrict__ count_out) {
    float total = 0.f, count = 0.f;
    for (int r = threadIdx.x; r < rows; r += blockDim.x) {
        total += row_loss[r];
        count += counted(labels[r], ignore_index, has_ignore) ? 1.f : 0.f;
    }
    total = block_sum(total);
    count = block_sum(count);
    if (threadIdx.x == 0) {
        loss_out[0] = total / fmaxf(count, 1.f);
        count_out[0] = count;
    }
}

template <typename T, typename L, bool WARP, bool VEC>
__global__ void ce_backward_kernel(const T* __restrict__ logits, const L* __restrict__ labels,
                                   const float* __restrict__ peak,
                                   const float* __restrict__ log_sum,
                                   const float* __restrict__ dloss,
                                   const float* __restrict__ count, T* __restrict__ dlogits,
                                   int rows, int cols, long long ignore_index, int has_ignore) {
    const RowGroup<WARP> g;
    if (g.row >= rows) return;
    const long long offset = (long long)g.row * cols;
    const T* lr = logits + offset;
    T* dr = dlogits + offset;
    const L label = labels[g.row];
    const float weight =
        counted(label, ignore_index, has_ignore) ? dloss[0] / fmaxf(count[0], 1.f) : 0.f;
    const float row_peak = peak[g.row], row_log_sum = log_sum[g.row];

    if constexpr (VEC) {
#pragma unroll 2
        for (int c = 4 * g.tid; c < cols; c += 4 * g.size) {
            const float4 v = load4(lr + c);
            const long long k = (long long)label - c;  // the label's place among the four
            store4(dr + c, weight * (expf(v.x - row_peak - row_log_sum) - (k == 0 ? 1.f : 0.f)),
                   weight * (expf(v.y - row_peak - row_log_sum) - (k == 1 ? 1.f : 0.f)),
                   weight * (expf(v.z - row_peak - row_log_sum) - (k == 2 ? 1.f : 0.f)),
                   weight * (expf(v.w - row_peak - row_log_sum) - (k == 3 ? 1.f : 0.f)));
        }
    } else {
#pragma unroll 4
        for (int c = g.tid; c < cols; c += g.size) {
            const float p = expf(to_float(lr[c]) - row_peak - row_log_sum);
            dr[c] = from_float<T>(weight * (p - ((long long)c == (long long)label ? 1.f : 0.f)));
        }
    }
}
