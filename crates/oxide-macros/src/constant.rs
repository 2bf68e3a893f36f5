//! `#[constant]` on `static NAME: ConstantMemory<T> = ConstantMemory::UNINIT;`
//! (cuda-oxide's constant memory; see `oxide_device::constant`).
//!
//! The static keeps its name as its symbol (`export_name`), so the host can write it by
//! name: `cuModuleGetGlobal` on the GPU, the library's symbol on the emulator. On the
//! device it goes in `CONSTANT_SECTION`, which the link step moves to `.const`. A
//! descriptor in the kernels' descriptor section names it and its value's type for the
//! manifest, from which Python makes `module.set_<name>(value)`.

use oxide_abi::DESCRIPTOR_VERSION;
use oxide_abi::descriptor::ConstantDescriptor;
use oxide_abi::names::{CONSTANT_SECTION, DESCRIPTOR_SECTION, RESERVED_PREFIX};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::ext::IdentExt;
use syn::{GenericArgument, ItemStatic, LitStr, PathArguments, Type};

const USAGE: &str =
    "#[constant] goes on `static NAME: ConstantMemory<T> = ConstantMemory::UNINIT;`";

pub fn constant(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    if !attr.is_empty() {
        return Err(syn::Error::new_spanned(
            attr,
            "#[constant] takes no arguments",
        ));
    }
    let mut s: ItemStatic = syn::parse2(item.clone())
        .map_err(|_| syn::Error::new(crate::parse::first_token_span(item), USAGE))?;
    if let syn::StaticMutability::Mut(m) = &s.mutability {
        return Err(syn::Error::new_spanned(
            m,
            "a #[constant] static is not `mut`: kernels only read it; the host sets it",
        ));
    }
    let value = value_type(&s.ty).ok_or_else(|| syn::Error::new_spanned(&s.ty, USAGE))?;
    let name = s.ident.unraw().to_string();
    let scalar = value
        .to_token_stream_string()
        .and_then(|t| oxide_abi::ScalarType::from_rust_name(&t));
    let record = scalar.is_none().then(|| crate::records::layout_of(&value));
    let descriptor = ConstantDescriptor {
        version: DESCRIPTOR_VERSION,
        constant: name.clone(),
        ty: scalar.unwrap_or_else(|| crate::records::lane_scalar(&value)),
        record,
    };
    let json = serde_json::to_string(&descriptor).expect("a descriptor serializes");
    let records: Vec<Type> = scalar
        .is_none()
        .then(|| value.clone())
        .into_iter()
        .collect();
    let (json, numbers) = crate::records::patch_json_for(&json, &records);
    let json = LitStr::new(&json, Span::call_site());
    let bytes = if numbers.is_empty() {
        quote!(::oxide_device::__private::descriptor_bytes(#json))
    } else {
        quote!(::oxide_device::__private::descriptor_bytes_with(#json, &[#(#numbers),*]))
    };
    let symbol = LitStr::new(&name, Span::call_site());
    let section = LitStr::new(CONSTANT_SECTION, Span::call_site());
    let descriptor_section = LitStr::new(DESCRIPTOR_SECTION, Span::call_site());
    s.attrs
        .push(syn::parse_quote!(#[unsafe(export_name = #symbol)]));
    s.attrs.push(syn::parse_quote!(#[used]));
    s.attrs.push(
        syn::parse_quote!(#[cfg_attr(target_arch = "nvptx64", unsafe(link_section = #section))]),
    );
    let ident = format_ident!("{}_constant_{}", RESERVED_PREFIX, name);
    Ok(quote! {
        #s
        #[used]
        #[unsafe(link_section = #descriptor_section)]
        #[doc(hidden)]
        #[allow(non_upper_case_globals, unsafe_code)]
        static #ident: [u8; { const JSON: &str = #json; JSON.len() }] = #bytes;
    })
}

/// `T` of `ConstantMemory<T>` (any path ending in `ConstantMemory`).
fn value_type(ty: &Type) -> Option<Type> {
    let Type::Path(p) = ty else { return None };
    let last = p.path.segments.last()?;
    if last.ident != "ConstantMemory" {
        return None;
    }
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first()? {
        GenericArgument::Type(t) => Some(t.clone()),
        _ => None,
    }
}

trait TypeName {
    fn to_token_stream_string(&self) -> Option<String>;
}

impl TypeName for Type {
    /// A bare type name (`f32`), if the type is one.
    fn to_token_stream_string(&self) -> Option<String> {
        match self {
            Type::Path(p) if p.qself.is_none() => p.path.get_ident().map(|i| i.to_string()),
            _ => None,
        }
    }
}
