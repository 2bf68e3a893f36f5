//! `#[cuda_module]`: cuda-oxide wraps a file's kernels in `#[cuda_module] mod kernels
//! { … }`, from which its host side generates a typed loader. pyoxide's host side is
//! Python, reading the manifest, so the attribute has nothing to generate: it checks
//! that it marks an inline module and places that module's `SharedArray` statics in
//! `.shared` (as `#[kernel]` does for statics in a kernel's body).

use proc_macro2::TokenStream;
use quote::quote;
use syn::visit_mut::VisitMut;

pub fn cuda_module(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    if !attr.is_empty() {
        return Err(syn::Error::new_spanned(
            attr,
            "#[cuda_module] takes no arguments here (pyoxide loads the module from Python)",
        ));
    }
    let mut module: syn::ItemMod = syn::parse2(item.clone()).map_err(|_| {
        syn::Error::new_spanned(&item, "#[cuda_module] goes on a module: `mod kernels { … }`")
    })?;
    let Some((_, items)) = module.content.as_mut() else {
        return Err(syn::Error::new_spanned(
            &module,
            "#[cuda_module] needs the module's items inline: `mod kernels { … }`, not `mod kernels;`",
        ));
    };
    for item in items.iter_mut() {
        if let syn::Item::Static(s) = item {
            crate::shared::Placer.visit_item_static_mut(s);
        }
    }
    Ok(quote!(#module))
}
