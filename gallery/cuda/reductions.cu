// Dot product: a grid-stride loop over float4 pairs, four of each in flight, a block
// reduction, one atomic per block into `out` (zeroed by the launch).
__global__ void __launch_bounds__(256)
dot(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out,
    long long n) {
    __shared__ float smem[32];
    const long long n4 = n >> 2;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    const float4* y4 = reinterpret_cast<const float4*>(y);
    const long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.f;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        float4 a[4], b[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            a[k] = __ldg(x4 + i + k * stride);
            b[k] = __ldg(y4 + i + k * stride);
        }
#pragma unroll
        for (int k = 0; k < 4; ++k) acc += a[k].x * b[k].x + a[k].y * b[k].y + a[k].z * b[k].z + a[k].w * b[k].w;
    }
    for (; i < n4; i += stride) {
        const float4 a = __ldg(x4 + i), b = __ldg(y4 + i);
        acc += a.x * b.x + a.y * b.y + a.z * b.z + a.w * b.w;
    }
    for (long long j = 4 * n4 + blockIdx.x * blockDim.x + threadIdx.x; j < n; j += stride)
        acc += x[j] * y[j];
    acc = block_sum(acc, smem);
    if (threadIdx.x == 0) atomicAdd(out, acc);
}
