//! Shared-memory statics: every `static` of type `SharedArray<…>` or `Barrier` (an
//! `mbarrier`, which lives in shared memory) in a kernel's body gets
//! `#[unsafe(link_section = ".oxide.shared")]`, which the link step turns into a
//! `.shared` variable. cuda-oxide's codegen recognises the types itself; this keeps
//! their spelling (`static mut TILE: SharedArray<f32, 256> = SharedArray::UNINIT;`,
//! `static mut BAR: Barrier = Barrier::UNINIT;`) working unchanged.

use oxide_abi::names::SHARED_SECTION;
use syn::visit_mut::VisitMut;
use syn::{ItemFn, ItemStatic, Type, parse_quote};

pub fn place_shared_statics(func: &mut ItemFn) {
    let mut placer = Placer::default();
    placer.visit_block_mut(&mut func.block);
    if !placer.names.is_empty() {
        BlockCopies(placer.names).visit_block_mut(&mut func.block);
    }
}

/// Also collects the names of the shared statics it placed.
#[derive(Default)]
pub(crate) struct Placer {
    names: Vec<syn::Ident>,
}

impl VisitMut for Placer {
    fn visit_item_static_mut(&mut self, item: &mut ItemStatic) {
        let already = item.attrs.iter().any(|a| {
            let text = quote::quote!(#a).to_string();
            text.contains("link_section")
        });
        if is_shared_array(&item.ty) && !already {
            item.attrs
                .push(parse_quote!(#[unsafe(link_section = #SHARED_SECTION)]));
            self.names.push(item.ident.clone());
        }
        syn::visit_mut::visit_item_static_mut(self, item);
    }
}

/// `&raw mut S`, `&raw const S`, `addr_of_mut!(S)` and `addr_of!(S)` of a shared static
/// `S` become `__private::shared_place(…)` of them: the same address on the GPU, the
/// running block's copy of the static in the emulator (where each block has its own,
/// and a raw address taken from the static itself would be every block's one).
struct BlockCopies(Vec<syn::Ident>);

impl BlockCopies {
    fn is_shared(&self, e: &syn::Expr) -> bool {
        matches!(e, syn::Expr::Path(p) if p.qself.is_none()
            && p.path.get_ident().is_some_and(|i| self.0.contains(i)))
    }
}

impl VisitMut for BlockCopies {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        let place: Option<(syn::Expr, bool)> = match &*e {
            syn::Expr::RawAddr(r) => Some((
                (*r.expr).clone(),
                matches!(r.mutability, syn::PointerMutability::Mut(_)),
            )),
            syn::Expr::Macro(m) => {
                let last = m.mac.path.segments.last().map(|s| s.ident.to_string());
                let mutable = match last.as_deref() {
                    Some("addr_of_mut") => Some(true),
                    Some("addr_of") => Some(false),
                    _ => None,
                };
                mutable.and_then(|mutable| Some((m.mac.parse_body().ok()?, mutable)))
            }
            _ => None,
        };
        match place {
            Some((inner, mutable)) if self.is_shared(&inner) => *e = shared_place(&inner, mutable),
            _ => syn::visit_mut::visit_expr_mut(self, e),
        }
    }
}

/// `__private::shared_place` of `&raw mut inner` (or of `&raw const inner`, as a const
/// pointer again).
fn shared_place(inner: &syn::Expr, mutable: bool) -> syn::Expr {
    if mutable {
        parse_quote!(::oxide_device::__private::shared_place(&raw mut #inner))
    } else {
        parse_quote!(
            ::oxide_device::__private::shared_place((&raw const #inner).cast_mut()).cast_const()
        )
    }
}

fn is_shared_array(ty: &Type) -> bool {
    match ty {
        Type::Path(p) => p
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "SharedArray" || s.ident == "Barrier"),
        Type::Group(g) => is_shared_array(&g.elem),
        Type::Paren(p) => is_shared_array(&p.elem),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_array_statics_move_to_the_shared_section() {
        let mut f: ItemFn = parse_quote! {
            fn k() {
                static mut A: SharedArray<f32, 4> = SharedArray::UNINIT;
                static B: u32 = 0;
                {
                    static C: oxide_device::shared::SharedArray<u8, 2> = SharedArray::UNINIT;
                }
                #[unsafe(link_section = ".elsewhere")]
                static D: SharedArray<u8, 1> = SharedArray::UNINIT;
                static mut E: Barrier = Barrier::UNINIT;
            }
        };
        place_shared_statics(&mut f);
        let text = quote::quote!(#f).to_string();
        assert_eq!(text.matches(".oxide.shared").count(), 3, "{text}");
        assert!(text.contains(".elsewhere"));
    }

    #[test]
    fn raw_addresses_of_shared_statics_go_through_the_block_copy() {
        let mut f: ItemFn = parse_quote! {
            fn k() {
                static mut A: SharedArray<u32, 4> = SharedArray::UNINIT;
                static B: u32 = 0;
                let p = core::ptr::addr_of_mut!(A) as *mut u32;
                let q = &raw const A;
                let r = &raw const B;
            }
        };
        place_shared_statics(&mut f);
        let text = quote::quote!(#f).to_string().replace(' ', "");
        assert_eq!(text.matches("shared_place").count(), 2, "{text}");
        assert!(text.contains("letr=&rawconstB"), "{text}");
    }
}
