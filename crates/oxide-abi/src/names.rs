//! Reserved names: symbol prefixes, section names, the link step's environment variable.
//!
//! No other crate spells these strings; a test in cargo-oxide greps the sources to keep
//! it that way (attribute positions, which need literals, are checked against these).

/// Every item the `#[kernel]` macro generates starts with this prefix, so user kernels
/// may not. It also marks the host (emulator) entry points.
pub const RESERVED_PREFIX: &str = "__oxide";

/// Section that holds one encoded [`crate::descriptor::KernelDescriptor`] per kernel.
/// The link step reads and removes these globals before optimisation.
pub const DESCRIPTOR_SECTION: &str = ".oxide.kernels";

/// Section that marks a static as block-shared memory. The link step moves such
/// statics to NVPTX address space 3 (`.shared`).
pub const SHARED_SECTION: &str = ".oxide.shared";

/// Section that marks a static as constant memory (`#[constant]`, cuda-oxide's
/// `ConstantMemory<T>`). The link step moves such statics to NVPTX address space 4
/// (`.const`), visible, so the host can write them by name before a launch.
pub const CONSTANT_SECTION: &str = ".oxide.constant";

/// The one dynamic shared-memory array of a kernel (its size is given at launch).
/// Device code declares it as an `extern` static of this name; the link step makes it
/// `.extern .shared .align 16 .b8 __oxide_dynamic_shared[]`.
pub const DYNAMIC_SHARED_SYMBOL: &str = "__oxide_dynamic_shared";

/// Alignment of the dynamic shared-memory array (enough for any scalar and for
/// 16-byte vector loads) unless the kernel asks more: `DynamicSharedArray<T, ALIGN>`
/// with ALIGN up to 256 names `{DYNAMIC_SHARED_SYMBOL}_a{ALIGN}`, which the link step
/// makes the same array with the largest alignment asked.
pub const DYNAMIC_SHARED_ALIGN: usize = 16;

/// Environment variable through which `cargo oxide build` hands the link step its
/// configuration (a path to a JSON [`crate::manifest::LinkConfig`]) when rustc runs
/// cargo-oxide as the nvptx "linker".
pub const LINK_CONFIG_ENV: &str = crate::inputs::OXIDE_LINK_CONFIG.name;

/// The GPU target triple pyoxide compiles for.
pub const DEVICE_TARGET: &str = "nvptx64-nvidia-cuda";

/// Device entry symbol of a kernel: the Rust name, plus `_<arg>` per generic argument
/// for instances of a generic kernel (`scale` → `scale_f32`), as in cuda-oxide's
/// instantiation form. Characters a PTX identifier cannot hold are mapped (`-` → `m`,
/// anything else → `_`), so const arguments such as `-1` still give a valid symbol.
#[cfg(feature = "serde")]
pub fn entry_symbol(kernel: &str, instance: &[&str]) -> String {
    let mut s = String::from(kernel);
    for arg in instance {
        s.push('_');
        s.extend(arg.chars().map(|c| match c {
            c if c.is_ascii_alphanumeric() || c == '_' => c,
            '-' => 'm',
            _ => '_',
        }));
    }
    s
}

/// The host (emulator) entry point for a device entry symbol.
#[cfg(feature = "serde")]
pub fn host_entry_symbol(entry: &str) -> String {
    format!("{HOST_ENTRY_PREFIX}{entry}")
}

/// The flag `#[cuda_module]` adds to the `#[kernel]` of a generic kernel that lists no
/// instances (the host's launches instantiate it, as in cuda-oxide).
pub const HOST_INSTANCED_FLAG: &str = "__oxide_host_instanced";

/// Prefix of the descriptor static's Rust identifier (also a generated item).
pub const DESCRIPTOR_ITEM_PREFIX: &str = "__oxide_descriptor_";
/// Prefix of the generated device wrapper's Rust identifier.
pub const DEVICE_WRAPPER_PREFIX: &str = "__oxide_entry_";
/// Prefix of host entry symbols.
pub const HOST_ENTRY_PREFIX: &str = "__oxide_host_";

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "serde")]
    #[test]
    fn entry_symbols_follow_the_instantiation_form() {
        assert_eq!(entry_symbol("vecadd", &[]), "vecadd");
        assert_eq!(entry_symbol("scale", &["f32"]), "scale_f32");
        assert_eq!(entry_symbol("tile", &["f64", "16"]), "tile_f64_16");
        assert_eq!(entry_symbol("k", &["-1"]), "k_m1");
        assert_eq!(entry_symbol("k", &["a::B"]), "k_a__B");
    }

    #[test]
    fn generated_prefixes_are_reserved() {
        for p in [
            DESCRIPTOR_ITEM_PREFIX,
            DEVICE_WRAPPER_PREFIX,
            HOST_ENTRY_PREFIX,
        ] {
            assert!(p.starts_with(RESERVED_PREFIX), "{p}");
        }
    }

    #[cfg(feature = "serde")]
    #[test]
    fn host_entry_symbol_has_the_prefix() {
        assert_eq!(host_entry_symbol("saxpy"), "__oxide_host_saxpy");
    }
}
