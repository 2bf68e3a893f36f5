// RMS norm and the fused residual add + RMS norm: one block per row, the row read once
// into registers as float4 (VPT vectors a thread), one block reduction, float4 stores.

__device__ __forceinline__ float sum_sq(float4 v) {
    return v.x * v.x + v.y * v.y + v.z * v.z + v.w * v.w;
}

// The end both kernels share: r = 1/rms of the row from each thread's sum of squares
// `ss`, then out = v · r · weight for this thread's vectors of the row.
template <int VPT>
__device__ __forceinline__ void scale_row(const float4 (&v)[VPT], float ss, float* smem,
                                          const float* __restrict__ weight, float eps,
                                          float* __restrict__ out, int n4, int cols) {
    const float r = rsqrtf(block_sum(ss, smem) / cols + eps);
    const float4* w4 = reinterpret_cast<const float4*>(weight);
    float4* o = reinterpret_cast<float4*>(out);
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
        const int c = threadIdx.x + i * blockDim.x;
        if (c < n4) {
            const float4 g = __ldg(w4 + c);
            o[c] = make_float4(v[i].x * r * g.x, v[i].y * r * g.y, v[i].z * r * g.z,
                               v[i].w * r * g.w);
        }
    }
}

template <int VPT>
__global__ void __launch_bounds__(1024)
rms_norm(const float* __restrict__ x, const float* __restrict__ weight, float eps,
         float* __restrict__ out, int cols) {
    __shared__ float smem[32];
    const int n4 = cols >> 2;
    const size_t base = (size_t)blockIdx.x * cols;
    const float4* xr = reinterpret_cast<const float4*>(x + base);
    float4 v[VPT];
    float ss = 0.f;
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
        const int c = threadIdx.x + i * blockDim.x;
        v[i] = c < n4 ? __ldg(xr + c) : zero4();
        ss += sum_sq(v[i]);
    }
    scale_row<VPT>(v, ss, smem, weight, eps, out + base, n4, cols);
}

template <int VPT>
__global__ void __launch_bounds__(1024)
add_rms_norm(const float* __restrict__ x, const float* __restrict__ residual,
             const float* __restrict__ weight, float eps, float* __restrict__ sum,
             float* __restrict__ out, int cols) {
    __shared__ float smem[32];
    const int n4 = cols >> 2;
    const size_t base = (size_t)blockIdx.x * cols;
    const float4* xr = reinterpret_cast<const float4*>(x + base);
    const float4* rr = reinterpret_cast<const float4*>(residual + base);
    float4* s4 = reinterpret_cast<float4*>(sum + base);
    float4 h[VPT];
    float ss = 0.f;
#pragma unroll
    for (int i = 0; i < VPT; ++i) {
        const int c = threadIdx.x + i * blockDim.x;
        h[i] = zero4();
        if (c < n4) {
            const float4 a = __ldg(xr + c), b = __ldg(rr + c);
            h[i] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
            s4[c] = h[i];
        }
        ss += sum_sq(h[i]);
    }
    scale_row<VPT>(h, ss, smem, weight, eps, out + base, n4, cols);
}
