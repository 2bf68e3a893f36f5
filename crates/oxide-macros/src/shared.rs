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
    Placer.visit_block_mut(&mut func.block);
}

pub(crate) struct Placer;

impl VisitMut for Placer {
    fn visit_item_static_mut(&mut self, item: &mut ItemStatic) {
        let already = item.attrs.iter().any(|a| {
            let text = quote::quote!(#a).to_string();
            text.contains("link_section")
        });
        if is_shared_array(&item.ty) && !already {
            item.attrs
                .push(parse_quote!(#[unsafe(link_section = #SHARED_SECTION)]));
        }
        syn::visit_mut::visit_item_static_mut(self, item);
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
}
