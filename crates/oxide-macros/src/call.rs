//! The call of a kernel's Rust function for one instance: shared by the device entry
//! (expand.rs) and the host entry (host.rs), so that neither module needs the other's.

use proc_macro2::{Ident, TokenStream};
use quote::quote;
use syn::GenericArgument;

use crate::validate::{Instance, Kernel};

/// The turbofish arguments of an instance (`f32`, `{ 4 }`), spanned as written so an
/// unsatisfied bound points at the instance.
pub(crate) fn turbofish(inst: &Instance) -> TokenStream {
    if inst.args.is_empty() {
        return TokenStream::new();
    }
    let args = inst.args.iter().map(|a| match (&a.value, a.is_const) {
        (GenericArgument::Type(t), false) => quote!(#t),
        (GenericArgument::Type(t), true) => quote!({ #t }),
        (GenericArgument::Const(e), _) => quote!({ #e }),
        (other, _) => quote!(#other),
    });
    quote!(::<#(#args),*>)
}

/// The call of the user's function for one instance, inside `unsafe` for unsafe
/// kernels: the body of both the device entry and the host (emulator) entry.
pub(crate) fn call_kernel(kernel: &Kernel, inst: &Instance, args: &[Ident]) -> TokenStream {
    let name = &kernel.func.sig.ident;
    let turbofish = turbofish(inst);
    let call = quote!(#name #turbofish (#(#args),*));
    if kernel.is_unsafe {
        quote!(unsafe { #call })
    } else {
        call
    }
}
