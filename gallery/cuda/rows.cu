// Per-row reductions and scans: one block per row, VPT float4 a thread (all loads
// issued before any is used), warp shuffles, one block reduction.

// The better of two (value, column) candidates: the larger value, the smaller column
// on ties.
__device__ __forceinline__ void better(float& v, int& i, float ov, int oi) {
    if (ov > v || (ov == v && oi < i)) {
        v = ov;
        i = oi;
    }
}

template <int VPT>
__global__ void __launch_bounds__(1024)
argmax_rows(const float* __restrict__ x, unsigned* __restrict__ out, int cols) {
    __shared__ float sv[32];
    __shared__ int si[32];
    const int n4 = cols >> 2;
    const float4* xr = reinterpret_cast<const float4*>(x + (size_t)blockIdx.x * cols);
    float4 v[VPT];
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
        const int c = threadIdx.x + i * blockDim.x;
        v[i] = c < n4 ? __ldg(xr + c) : make_float4(-INFINITY, -INFINITY, -INFINITY, -INFINITY);
    }
    float best = -INFINITY;
    int at = 0x7fffffff;
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
        const int c = 4 * (threadIdx.x + i * blockDim.x);
        if (c < cols) {
            better(best, at, v[i].x, c);
            better(best, at, v[i].y, c + 1);
            better(best, at, v[i].z, c + 2);
            better(best, at, v[i].w, c + 3);
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        better(best, at, __shfl_xor_sync(FULL_MASK, best, o), __shfl_xor_sync(FULL_MASK, at, o));
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) {
        sv[warp] = best;
        si[warp] = at;
    }
    __syncthreads();
    if (warp == 0) {
        best = lane < (int)(blockDim.x >> 5) ? sv[lane] : -INFINITY;
        at = lane < (int)(blockDim.x >> 5) ? si[lane] : 0x7fffffff;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            better(best, at, __shfl_xor_sync(FULL_MASK, best, o), __shfl_xor_sync(FULL_MASK, at, o));
        if (lane == 0) out[blockIdx.x] = at;
    }
}

// This thread's (max, Σ exp(x − max)) over its registers.
template <int VPT>
__device__ __forceinline__ MaxSum local_max_sum(const float4 (&v)[VPT], int n4) {
    float m = -INFINITY;
#pragma unroll
    for (int i = 0; i < VPT; ++i)
        if (threadIdx.x + i * blockDim.x < n4)
            m = fmaxf(m, fmaxf(fmaxf(v[i].x, v[i].y), fmaxf(v[i].z, v[i].w)));
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < VPT; ++i)
        if (threadIdx.x + i * blockDim.x < n4)
            s += expf(v[i].x - m) + expf(v[i].y - m) + expf(v[i].z - m) + expf(v[i].w - m);
    return {m, s};
}

template <int VPT>
__device__ __forceinline__ void load_row(const float4* xr, int n4, float4 (&v)[VPT]) {
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
        const int c = threadIdx.x + i * blockDim.x;
        v[i] = c < n4 ? __ldg(xr + c) : zero4();
    }
}

template <int VPT>
__global__ void __launch_bounds__(1024)
cross_entropy_rows(const float* __restrict__ logits, const long long* __restrict__ target,
                   float* __restrict__ loss, int cols) {
    __shared__ MaxSum smem[32];
    const int n4 = cols >> 2;
    const float* row = logits + (size_t)blockIdx.x * cols;
    float4 v[VPT];
    load_row<VPT>(reinterpret_cast<const float4*>(row), n4, v);
    const MaxSum ms = block_max_sum(local_max_sum<VPT>(v, n4), smem);
    if (threadIdx.x == 0) loss[blockIdx.x] = ms.m + logf(ms.s) - __ldg(row + target[blockIdx.x]);
}

template <int VPT>
__global__ void __launch_bounds__(1024)
log_softmax_rows(const float* __restrict__ x, float* __restrict__ out, int cols) {
    __shared__ MaxSum smem[32];
    const int n4 = cols >> 2;
    const size_t base = (size_t)blockIdx.x * cols;
    float4 v[VPT];
    load_row<VPT>(reinterpret_cast<const float4*>(x + base), n4, v);
    const MaxSum ms = block_max_sum(local_max_sum<VPT>(v, n4), smem);
    const float shift = ms.m + logf(ms.s);
    float4* o = reinterpret_cast<float4*>(out + base);
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
        const int c = threadIdx.x + i * blockDim.x;
        if (c < n4) o[c] = make_float4(v[i].x - shift, v[i].y - shift, v[i].z - shift, v[i].w - shift);
    }
}

// Inclusive prefix sum of each row. Warp w owns the contiguous float4s
// [w·32·VPT, (w+1)·32·VPT) of the row; its lanes load them coalesced (lane l takes
// vector w·32·VPT + 32i + l), scan each 128-element slice with shuffles and carry its
// total to the next; the warps' totals are scanned through shared memory.
template <int VPT>
__global__ void __launch_bounds__(1024)
cumsum_rows(const float* __restrict__ x, float* __restrict__ out, int cols) {
    __shared__ float totals[32];
    const int n4 = cols >> 2;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const size_t base = (size_t)blockIdx.x * cols;
    const int first = warp * 32 * VPT + lane;
    const float4* xr = reinterpret_cast<const float4*>(x + base);
    float4 v[VPT];
#pragma unroll
    for (int i = 0; i < VPT; ++i) v[i] = first + 32 * i < n4 ? __ldg(xr + first + 32 * i) : zero4();
    float carry = 0.f;
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
        v[i].y += v[i].x;
        v[i].z += v[i].y;
        v[i].w += v[i].z;
        float incl = v[i].w;
#pragma unroll
        for (int d = 1; d < 32; d <<= 1) {
            const float other = __shfl_up_sync(FULL_MASK, incl, d);
            if (lane >= d) incl += other;
        }
        const float before = carry + incl - v[i].w;
        v[i].x += before;
        v[i].y += before;
        v[i].z += before;
        v[i].w += before;
        carry += __shfl_sync(FULL_MASK, incl, 31);
    }
    if (lane == 0) totals[warp] = carry;
    __syncthreads();
    float t = lane < (int)(blockDim.x >> 5) ? totals[lane] : 0.f;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const float other = __shfl_up_sync(FULL_MASK, t, d);
        if (lane >= d) t += other;
    }
    const float previous = __shfl_sync(FULL_MASK, t, warp > 0 ? warp - 1 : 0);
    const float offset = warp > 0 ? previous : 0.f;
    float4* o = reinterpret_cast<float4*>(out + base);
#pragma unroll
    for (int i = 0; i < VPT; ++i)
        if (first + 32 * i < n4)
            o[first + 32 * i] = make_float4(v[i].x + offset, v[i].y + offset, v[i].z + offset,
                                            v[i].w + offset);
}
