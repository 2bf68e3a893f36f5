// The 5-point Laplacian with zeros outside. Blocks of 32 × 4 threads: lane x owns a
// float4 of columns, and each thread walks STRIP rows down its column strip with the
// rows above, at and below held in registers (each row read once, but for the strip's
// two halo rows). Left and right neighbours come from the neighbouring lanes by
// shuffle; the warp's two edge lanes load theirs.
#define STRIP 16

__global__ void __launch_bounds__(128)
laplacian_2d(const float* __restrict__ x, float* __restrict__ out, int rows, int cols) {
    const int n4 = cols >> 2;
    const int c = blockIdx.x * 32 + threadIdx.x;
    const int lane = threadIdx.x;
    const int r0 = (blockIdx.y * blockDim.y + threadIdx.y) * STRIP;
    if (r0 >= rows) return;  // the whole warp: r0 is the same in its lanes
    const int r1 = min(rows, r0 + STRIP);
    const bool inside = c < n4;
    const float4* x4 = reinterpret_cast<const float4*>(x);
    auto row4 = [&](int r) { return inside && r >= 0 && r < rows ? __ldg(x4 + (size_t)r * n4 + c) : zero4(); };
    float4 up = row4(r0 - 1), cur = row4(r0);
    for (int r = r0; r < r1; ++r) {
        const float4 down = row4(r + 1);
        float left = __shfl_up_sync(FULL_MASK, cur.w, 1);
        float right = __shfl_down_sync(FULL_MASK, cur.x, 1);
        if (lane == 0) left = inside && c > 0 ? __ldg(x + (size_t)r * cols + 4 * c - 1) : 0.f;
        if (lane == 31) right = c + 1 < n4 ? __ldg(x + (size_t)r * cols + 4 * c + 4) : 0.f;
        if (inside) {
            float4 o;
            o.x = up.x + down.x + left + cur.y - 4.f * cur.x;
            o.y = up.y + down.y + cur.x + cur.z - 4.f * cur.y;
            o.z = up.z + down.z + cur.y + cur.w - 4.f * cur.z;
            o.w = up.w + down.w + cur.z + right - 4.f * cur.w;
            reinterpret_cast<float4*>(out)[(size_t)r * n4 + c] = o;
        }
        up = cur;
        cur = down;
    }
}
