// Column sums. Blocks of 32 × 8 threads: lane x owns a float4 of columns (a warp reads
// 512 contiguous bytes of a row), y splits the block's ROWS_PER_BLOCK rows eight ways,
// four rows' loads in flight; the eight partials meet in shared memory and one atomic
// per column adds the block's sum to `out`, which the launch zeroes first.
#define ROWS_PER_BLOCK 256

__global__ void __launch_bounds__(256)
col_sum(const float* __restrict__ x, float* __restrict__ out, int rows, int cols) {
    __shared__ float4 part[8][32];
    const int n4 = cols >> 2;
    const int c = blockIdx.x * 32 + threadIdx.x;
    const int r0 = blockIdx.y * ROWS_PER_BLOCK;
    const int r1 = min(rows, r0 + ROWS_PER_BLOCK);
    float4 acc = zero4();
    if (c < n4) {
        const float4* col = reinterpret_cast<const float4*>(x) + c;
        int r = r0 + threadIdx.y;
        for (; r + 24 < r1; r += 32) {
            float4 a[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) a[k] = __ldg(col + (size_t)(r + 8 * k) * n4);
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                acc.x += a[k].x;
                acc.y += a[k].y;
                acc.z += a[k].z;
                acc.w += a[k].w;
            }
        }
        for (; r < r1; r += 8) {
            const float4 a = __ldg(col + (size_t)r * n4);
            acc.x += a.x;
            acc.y += a.y;
            acc.z += a.z;
            acc.w += a.w;
        }
    }
    part[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && c < n4) {
#pragma unroll
        for (int k = 1; k < 8; ++k) {
            acc.x += part[k][threadIdx.x].x;
            acc.y += part[k][threadIdx.x].y;
            acc.z += part[k][threadIdx.x].z;
            acc.w += part[k][threadIdx.x].w;
        }
        atomicAdd(out + 4 * c, acc.x);
        atomicAdd(out + 4 * c + 1, acc.y);
        atomicAdd(out + 4 * c + 2, acc.z);
        atomicAdd(out + 4 * c + 3, acc.w);
    }
}
