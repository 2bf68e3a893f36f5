// Embedding lookup by row segments: blockIdx.x is the output row (rows fastest, so every
// row's first segment is copied before any row's second and a repeated id reads its
// segment from the L2), blockIdx.y the segment of blockDim.x float4 columns; one float4
// per thread.
__global__ void __launch_bounds__(256)
embedding(const float* __restrict__ table, const long long* __restrict__ ids,
          float* __restrict__ out, int dim) {
    const int n4 = dim >> 2;
    const int c = blockIdx.y * blockDim.x + threadIdx.x;
    if (c >= n4) return;
    const float4* src = reinterpret_cast<const float4*>(table + (size_t)ids[blockIdx.x] * dim);
    reinterpret_cast<float4*>(out + (size_t)blockIdx.x * dim)[c] = __ldg(src + c);
}
