// Elementwise activations: one float4 per thread, no bounds check but the last one.

__device__ __forceinline__ float gelu(float v) {
    return 0.5f * v * (1.f + erff(v * 0.70710678118654752f));
}

// grid (ceil(cols/4 / blockDim.x), rows): blockIdx.y is the row, so the bias column
// needs no division.
__global__ void __launch_bounds__(256)
bias_gelu(const float* __restrict__ x, const float* __restrict__ bias,
          float* __restrict__ out, int cols) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= (cols >> 2)) return;
    const size_t at = (size_t)blockIdx.y * (cols >> 2) + c;
    const float4 v = __ldg(reinterpret_cast<const float4*>(x) + at);
    const float4 b = __ldg(reinterpret_cast<const float4*>(bias) + c);
    reinterpret_cast<float4*>(out)[at] =
        make_float4(gelu(v.x + b.x), gelu(v.y + b.y), gelu(v.z + b.z), gelu(v.w + b.w));
}

__device__ __forceinline__ float silu_mul(float g, float u) { return g / (1.f + expf(-g)) * u; }

__global__ void __launch_bounds__(256)
swiglu(const float* __restrict__ gate, const float* __restrict__ up, float* __restrict__ out,
       long long n4) {
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n4) return;
    const float4 g = __ldg(reinterpret_cast<const float4*>(gate) + i);
    const float4 u = __ldg(reinterpret_cast<const float4*>(up) + i);
    reinterpret_cast<float4*>(out)[i] = make_float4(silu_mul(g.x, u.x), silu_mul(g.y, u.y),
                                                    silu_mul(g.z, u.z), silu_mul(g.w, u.w));
}
