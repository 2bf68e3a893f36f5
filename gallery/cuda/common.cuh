// Shared by every twin (prepended to each file's source before NVRTC compiles it):
// warp and block reductions over shuffles, as a CUDA programmer writes them.
#define FULL_MASK 0xffffffffu
#ifndef INFINITY  // NVRTC includes no math.h
#define INFINITY __int_as_float(0x7f800000)
#endif

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(FULL_MASK, v, o));
    return v;
}

// The block's sum in every thread (blockDim.x a multiple of 32, `smem` 32 floats):
// one barrier to publish the warps' sums, then every warp reduces them itself.
__device__ __forceinline__ float block_sum(float v, float* smem) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x >> 5) ? smem[lane] : 0.f;
    return warp_sum(v);
}

// A running (max, Σ exp(x − max)) pair: log-sum-exp in one pass and one reduction.
struct MaxSum {
    float m, s;
};

__device__ __forceinline__ MaxSum max_sum_combine(MaxSum a, MaxSum b) {
    const float m = fmaxf(a.m, b.m);
    if (m == -INFINITY) return {m, 0.f};
    return {m, a.s * expf(a.m - m) + b.s * expf(b.m - m)};
}

__device__ __forceinline__ MaxSum block_max_sum(MaxSum v, MaxSum* smem) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        MaxSum other = {__shfl_xor_sync(FULL_MASK, v.m, o), __shfl_xor_sync(FULL_MASK, v.s, o)};
        v = max_sum_combine(v, other);
    }
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x >> 5) ? smem[lane] : MaxSum{-INFINITY, 0.f};
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        MaxSum other = {__shfl_xor_sync(FULL_MASK, v.m, o), __shfl_xor_sync(FULL_MASK, v.s, o)};
        v = max_sum_combine(v, other);
    }
    return v;
}

__device__ __forceinline__ float4 zero4() { return make_float4(0.f, 0.f, 0.f, 0.f); }
