//! Helpers for the unit tests of the expansion stages.

use proc_macro2::TokenStream;

use crate::parse::parse;
use crate::validate::{Instance, Kernel, validate};

/// `#[kernel(attr)] item`, parsed and validated (panics with the error otherwise).
pub fn kernel(attr: TokenStream, item: TokenStream) -> Kernel {
    validate(parse(attr, item).unwrap()).unwrap_or_else(|e| panic!("{e}"))
}

/// The code `entry` generates for the first instance of `#[kernel] item`, as token text.
pub fn entry_code(entry: fn(&Kernel, &Instance) -> TokenStream, item: TokenStream) -> String {
    let k = kernel(TokenStream::new(), item);
    entry(&k, &k.instances[0]).to_string()
}

/// The entry `entry` generates for `item`'s first instance contains each of `expected`;
/// returns the code.
pub fn assert_entry_contains(
    entry: fn(&Kernel, &Instance) -> TokenStream,
    item: TokenStream,
    expected: &[&str],
) -> String {
    let code = entry_code(entry, item);
    assert_contains_all(&code, expected);
    code
}

/// Generated code, as its token text, contains each of `expected`.
pub fn assert_contains_all(code: &str, expected: &[&str]) {
    for e in expected {
        assert!(code.contains(e), "{e} not in {code}");
    }
}
