//! Elementwise kernels: one output element per input element.

use oxide_device::math;
use oxide_device::prelude::*;

// The memory-bound maps below go through `DisjointSlice::map`: each thread moves 16
// bytes of every array per step as 128-bit loads and stores, the inputs through the
// read-only path, and a plain call launches one thread per 16 output bytes.

/// `c[i] = a[i] + b[i]`.
#[kernel]
#[launch(elementwise(c, per_thread = vector))]
pub fn vecadd(a: &[f32], b: &[f32], mut c: DisjointSlice<f32>) {
    c.map((a, b), |(a, b)| a + b);
}

/// `out[i] = a * x[i] + y[i]`.
#[kernel]
#[launch(elementwise(out, per_thread = vector))]
pub fn saxpy(a: f32, x: &[f32], y: &[f32], mut out: DisjointSlice<f32>) {
    out.map((x, y), |(x, y)| a * x + y);
}

/// `out[i] = factor * x[i]`, for `f32` (`scale_f32`) and `f64` (`scale_f64`).
#[kernel(f32, f64)]
#[launch(elementwise(out, per_thread = vector))]
pub fn scale<T: Copy + core::ops::Mul<Output = T>>(factor: T, x: &[T], mut out: DisjointSlice<T>) {
    out.map(x, |x| factor * x);
}

/// What `activate` applies after the polynomial: an enum matched per element.
#[derive(Clone, Copy)]
enum Activation {
    Identity,
    Relu,
    Tanh,
    /// The exact GELU, `v/2 · (1 + erf(v/√2))`.
    Gelu,
}

impl Activation {
    fn from_code(code: u32) -> Option<Activation> {
        match code {
            0 => Some(Activation::Identity),
            1 => Some(Activation::Relu),
            2 => Some(Activation::Tanh),
            3 => Some(Activation::Gelu),
            _ => None,
        }
    }
}

/// A generic trait with a blanket impl: anything that maps an `f32` applies.
trait Apply {
    fn apply(&self, v: f32) -> f32;
}

impl<F: Fn(f32) -> f32> Apply for F {
    fn apply(&self, v: f32) -> f32 {
        self(v)
    }
}

impl Apply for Activation {
    fn apply(&self, v: f32) -> f32 {
        match self {
            Activation::Identity => v,
            Activation::Relu => v.max(0.0),
            Activation::Tanh => v.tanh(),
            Activation::Gelu => 0.5 * v * (1.0 + math::erf(v * core::f32::consts::FRAC_1_SQRT_2)),
        }
    }
}

fn compose<A: Apply, B: Apply>(first: A, then: B) -> impl Fn(f32) -> f32 {
    move |v| then.apply(first.apply(v))
}

/// `out[i] = act(p(x[i]))`, `p(v) = Σ coeffs[j]·v^j` by Horner's rule over an iterator,
/// `act` chosen by `activation` (0 identity, 1 relu, 2 tanh, 3 gelu; any other code
/// writes NaN). Ordinary Rust on the GPU: iterators, closures, a trait with a blanket
/// impl, an enum and `match`, `Option` combinators.
#[kernel]
pub fn activate(x: &[f32], coeffs: &[f32], activation: u32, mut out: DisjointSlice<f32>) {
    let idx = thread::index_1d();
    let i = idx.get();
    let poly = |v: f32| {
        coeffs
            .iter()
            .rev()
            .fold(0.0f32, |acc, &c| acc.mul_add(v, c))
    };
    let value = Activation::from_code(activation)
        .map(|act| compose(poly, act).apply(x[i.min(x.len().saturating_sub(1))]))
        .unwrap_or(f32::NAN);
    if let Some(o) = out.get_mut(idx) {
        *o = value;
    }
}
