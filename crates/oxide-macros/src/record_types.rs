//! What a non-scalar parameter type ("record", see `records.rs`) is, from its syntax
//! alone: whether a type can be one, the scalar it is made of, and the type with a
//! kernel instance's generic arguments bound. Below `validate` (which classifies
//! parameters with it) and `records` (which generates code with it).

use oxide_abi::ScalarType;
use quote::ToTokens;
use syn::visit_mut::VisitMut;
use syn::{Expr, GenericArgument, Ident, Type};

/// A type that can be a record: a named type (not a reference), an array or a
/// non-empty tuple. Whether it is `Copy` and sized is the compiler's to check.
pub fn is_record(ty: &Type) -> bool {
    match ty {
        Type::Path(p) => p.qself.is_none(),
        Type::Array(_) => true,
        Type::Tuple(t) => !t.elems.is_empty(),
        Type::Paren(p) => is_record(&p.elem),
        Type::Group(g) => is_record(&g.elem),
        _ => false,
    }
}

/// The one scalar a record is made of, where the type says so: `[T; N]` (nested too),
/// cuda-oxide's `DeviceAtomic*` cells and `Uniform<T>`; else `u8` (its bytes).
pub fn lane_scalar(ty: &Type) -> ScalarType {
    match ty {
        Type::Array(a) => lane_scalar(&a.elem),
        Type::Paren(p) => lane_scalar(&p.elem),
        Type::Group(g) => lane_scalar(&g.elem),
        Type::Path(p) => {
            let Some(last) = p.path.segments.last() else {
                return ScalarType::U8;
            };
            let name = last.ident.to_string();
            if let Some(t) = ScalarType::from_rust_name(&name) {
                return t;
            }
            if let Some(t) = name
                .strip_prefix("DeviceAtomic")
                .and_then(|s| ScalarType::from_rust_name(&s.to_lowercase()))
            {
                return t;
            }
            if name == "Uniform"
                && let syn::PathArguments::AngleBracketed(args) = &last.arguments
                && let Some(GenericArgument::Type(t)) = args.args.first()
            {
                return lane_scalar(t);
            }
            ScalarType::U8
        }
        _ => ScalarType::U8,
    }
}

/// `ty` with the kernel's generic parameters replaced by one instance's arguments
/// (`args` gives the argument bound to a parameter name).
pub fn bind<'a>(ty: &Type, args: impl Fn(&Ident) -> Option<&'a GenericArgument>) -> Type {
    let mut ty = ty.clone();
    Bind(&args).visit_type_mut(&mut ty);
    ty
}

struct Bind<'f, F>(&'f F);

impl<'a, F: Fn(&Ident) -> Option<&'a GenericArgument>> VisitMut for Bind<'_, F> {
    fn visit_type_mut(&mut self, ty: &mut Type) {
        if let Type::Path(p) = ty
            && p.qself.is_none()
            && let Some(ident) = p.path.get_ident()
            && let Some(arg) = (self.0)(ident)
        {
            match arg {
                GenericArgument::Type(t) => *ty = t.clone(),
                GenericArgument::Const(e) => *ty = syn::parse_quote!(#e),
                _ => {}
            }
            return;
        }
        syn::visit_mut::visit_type_mut(self, ty);
    }

    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        if let Expr::Path(p) = expr
            && p.qself.is_none()
            && let Some(ident) = p.path.get_ident()
            && let Some(arg) = (self.0)(ident)
        {
            let value = match arg {
                GenericArgument::Const(e) => e.to_token_stream(),
                other => other.to_token_stream(),
            };
            *expr = syn::parse_quote!({ #value });
            return;
        }
        syn::visit_mut::visit_expr_mut(self, expr);
    }

    fn visit_generic_argument_mut(&mut self, arg: &mut GenericArgument) {
        // `Tagged<u32, M>` parses `M` as a type; a const parameter there is bound to a
        // const value, which goes in braces.
        if let GenericArgument::Type(Type::Path(p)) = arg
            && let Some(ident) = p.path.get_ident()
            && let Some(GenericArgument::Const(e)) = (self.0)(ident)
        {
            *arg = GenericArgument::Const(syn::parse_quote!({ #e }));
            return;
        }
        syn::visit_mut::visit_generic_argument_mut(self, arg);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    #[test]
    fn lanes() {
        let t = |ty: Type| lane_scalar(&ty);
        assert_eq!(t(parse_quote!([[f32; 3]; 2])), ScalarType::F32);
        assert_eq!(t(parse_quote!(DeviceAtomicU64)), ScalarType::U64);
        assert_eq!(t(parse_quote!(Uniform<u32>)), ScalarType::U32);
        assert_eq!(t(parse_quote!(Quad)), ScalarType::U8);
        assert_eq!(t(parse_quote!((f32, f64))), ScalarType::U8);
    }

    #[test]
    fn records_are_named_types_arrays_and_tuples() {
        assert!(is_record(&parse_quote!(super::Quad)));
        assert!(is_record(&parse_quote!([u64; 2])));
        assert!(!is_record(&parse_quote!(())));
        assert!(!is_record(&parse_quote!(&str)));
    }
}
