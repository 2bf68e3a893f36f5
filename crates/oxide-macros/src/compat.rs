//! What cuda-oxide's kernel files take for granted, kept apart from the kernel macro:
//!
//! - `#[cuda_module]`: cuda-oxide wraps a file's kernels in `#[cuda_module] mod kernels
//!   { … }`, from which its host side generates a typed loader. pyoxide's host side is
//!   Python, reading the manifest, so the attribute has nothing to generate: it checks
//!   that it marks an inline module and places that module's `SharedArray` statics in
//!   `.shared` (as `#[kernel]` does for statics in a kernel's body).
//! - Float methods without an import: cuda-oxide's codegen lowers `x.sin()` itself,
//!   while on `nvptx64` `core` has no `f32::sin`; `oxide_device::math::GpuFloat` does.
//!   Kernels, `#[device]` functions and `#[cuda_module]` modules get it in scope as
//!   `use … as _` (allowed unused: on the host, std's inherent methods win).

use proc_macro2::TokenStream;
use quote::quote;
use syn::parse_quote;
use syn::visit_mut::VisitMut;

/// `use ::oxide_device::math::GpuFloat as _;`, allowed unused.
fn float_methods() -> syn::Item {
    parse_quote! {
        #[allow(unused_imports)]
        use ::oxide_device::math::GpuFloat as _;
    }
}

/// Put the float methods in scope in a function's body.
pub fn bring_float_methods(func: &mut syn::ItemFn) {
    func.block.stmts.insert(0, syn::Stmt::Item(float_methods()));
}

pub fn cuda_module(attr: TokenStream, item: TokenStream) -> syn::Result<TokenStream> {
    if !attr.is_empty() {
        return Err(syn::Error::new_spanned(
            attr,
            "#[cuda_module] takes no arguments here (pyoxide loads the module from Python)",
        ));
    }
    let mut module: syn::ItemMod = syn::parse2(item.clone()).map_err(|_| {
        syn::Error::new_spanned(
            &item,
            "#[cuda_module] goes on a module: `mod kernels { … }`",
        )
    })?;
    let Some((_, items)) = module.content.as_mut() else {
        return Err(syn::Error::new_spanned(
            &module,
            "#[cuda_module] needs the module's items inline: `mod kernels { … }`, not `mod kernels;`",
        ));
    };
    for item in items.iter_mut() {
        match item {
            syn::Item::Static(s) => crate::shared::Placer::default().visit_item_static_mut(s),
            syn::Item::Fn(f) => mark_host_instanced(f),
            _ => {}
        }
    }
    items.insert(0, float_methods());
    Ok(quote!(#module))
}

/// The flag `#[cuda_module]` adds to the `#[kernel]` of a generic kernel that lists no
/// instances. In cuda-oxide the host's launches instantiate generic kernels (its
/// typed loader is generated from them); with the host code gone, such a kernel has
/// no instances, and builds without entry points as it would there. Outside
/// `#[cuda_module]`, pyoxide's rule stands: a generic kernel lists its instances.
pub const HOST_INSTANCED: &str = oxide_abi::names::HOST_INSTANCED_FLAG;

fn mark_host_instanced(f: &mut syn::ItemFn) {
    let generic = f
        .sig
        .generics
        .params
        .iter()
        .any(|p| !matches!(p, syn::GenericParam::Lifetime(_)));
    if !generic {
        return;
    }
    let flag = syn::Ident::new(HOST_INSTANCED, proc_macro2::Span::call_site());
    for attr in &mut f.attrs {
        if attr
            .path()
            .segments
            .last()
            .is_none_or(|s| s.ident != "kernel")
        {
            continue;
        }
        let args = match &attr.meta {
            syn::Meta::Path(_) => TokenStream::new(),
            syn::Meta::List(l) => l.tokens.clone(),
            syn::Meta::NameValue(_) => return,
        };
        // Only a list without instances: flags and `launch_context = x` are not types.
        let lists_instances =
            take_launch_context(args.clone()).is_ok_and(|(rest, _, _)| !rest.is_empty());
        if !lists_instances {
            let path = attr.path().clone();
            let sep = if args.is_empty() { quote!() } else { quote!(,) };
            *attr = syn::parse_quote!(#[#path(#args #sep #flag)]);
        }
    }
}

/// `#[kernel(f32, launch_context = lc)]`: take cuda-oxide's `launch_context = NAME` out
/// of the attribute (the rest is the instance list) and return NAME. cuda-oxide's
/// `unchecked_indexing` flag is taken out too: bounds checks stay (a failed one traps).
pub fn take_launch_context(
    attr: TokenStream,
) -> syn::Result<(TokenStream, Option<syn::Ident>, bool)> {
    use proc_macro2::TokenTree;
    let mut chunks: Vec<Vec<TokenTree>> = vec![Vec::new()];
    for tt in attr {
        match &tt {
            TokenTree::Punct(p) if p.as_char() == ',' => chunks.push(Vec::new()),
            _ => chunks.last_mut().expect("one chunk").push(tt),
        }
    }
    let mut name = None;
    let mut host_instanced = false;
    let mut kept: Vec<TokenStream> = Vec::new();
    for chunk in chunks {
        match chunk.as_slice() {
            [TokenTree::Ident(key), TokenTree::Punct(eq), rest @ ..]
                if key == "launch_context" && eq.as_char() == '=' =>
            {
                match rest {
                    [TokenTree::Ident(id)] => name = Some(id.clone()),
                    _ => {
                        return Err(syn::Error::new_spanned(
                            key,
                            "`launch_context = NAME` takes a variable name",
                        ));
                    }
                }
            }
            [] => {}
            [TokenTree::Ident(flag)] if flag == "unchecked_indexing" => {}
            [TokenTree::Ident(flag)] if flag == HOST_INSTANCED => host_instanced = true,
            _ => kept.push(chunk.into_iter().collect()),
        }
    }
    Ok((quote!(#(#kept),*), name, host_instanced))
}

/// cuda-oxide's kernel-side attributes that pyoxide accepts without a launch-time
/// meaning (yet): `#[launch_contract(…)]` on the kernel is removed (the Python launcher
/// sizes and checks launches from the manifest, which has no contract field), and
/// `#[unroll]`/`#[unroll(N)]` on loops in its body are removed (stable Rust has no
/// loop-metadata hook; LLVM unrolls constant-trip loops at O3 by itself). With
/// `launch_context = NAME`, the body starts with `let NAME = LaunchContext::current();`.
pub fn prepare_kernel(item: TokenStream, context: Option<syn::Ident>) -> TokenStream {
    let Ok(mut func) = syn::parse2::<syn::ItemFn>(item.clone()) else {
        return item; // the kernel macro reports what is wrong with it
    };
    func.attrs.retain(|a| !a.path().is_ident("launch_contract"));
    StripUnroll.visit_block_mut(&mut func.block);
    if let Some(name) = context {
        func.block.stmts.insert(
            0,
            parse_quote! {
                #[allow(unused_variables)]
                let #name = ::oxide_device::thread::LaunchContext::current();
            },
        );
    }
    quote!(#func)
}

struct StripUnroll;

impl VisitMut for StripUnroll {
    fn visit_expr_mut(&mut self, expr: &mut syn::Expr) {
        let attrs = match expr {
            syn::Expr::ForLoop(e) => Some(&mut e.attrs),
            syn::Expr::While(e) => Some(&mut e.attrs),
            syn::Expr::Loop(e) => Some(&mut e.attrs),
            _ => None,
        };
        if let Some(attrs) = attrs {
            attrs.retain(|a| !a.path().is_ident("unroll"));
        }
        syn::visit_mut::visit_expr_mut(self, expr);
    }
}
