//! With the `bundle-kernels` feature (the pyoxide wheel: pyproject.toml turns it on), build
//! the bundled kernels_rs into pyoxide/_prebuilt, so that `maturin build` alone makes a
//! wheel whose `from pyoxide import kernels` needs no Rust toolchain.

fn main() {
    println!("cargo:rerun-if-env-changed=PYOXIDE_NATIVE_STAMP");
    if std::env::var_os("CARGO_FEATURE_BUNDLE_KERNELS").is_none() {
        return;
    }
    let checkout = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let checkout = checkout.canonicalize().expect("the pyoxide checkout");
    oxide_build::Bundle::pyoxide_bundled(checkout).run();
}
