//! The rules a kernel must follow, each reported as a spanned error, and the checked
//! model (`Kernel`) that `expand` works from. All errors found are reported at once.

use oxide_abi::descriptor::LaunchBounds;
use oxide_abi::names::{RESERVED_PREFIX, entry_symbol};
use oxide_abi::{ParamKind, ScalarType};
use proc_macro2::Span;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::{
    FnArg, GenericArgument, GenericParam, Ident, ItemFn, Pat, PathArguments, ReturnType, Type,
};

use crate::parse::{InstanceSyntax, KernelInput};

mod launch;
mod shape;
mod tune;
mod variant;

pub use launch::{Extent, Launch, LaunchKind, PerThread};
use launch::{check_cluster, check_cluster_values, check_launch, check_launch_bounds};
pub use launch::{resolve_cluster, resolve_tile};
pub use shape::ArrayParam;
pub use variant::KernelTensorMaps;

/// A kernel that passed every rule.
pub struct Kernel {
    /// The user's function, emitted unchanged (less `#[launch_bounds]`).
    pub func: ItemFn,
    /// The Rust name without `r#`.
    pub name: String,
    pub is_unsafe: bool,
    pub params: Vec<Param>,
    /// One per entry point; a non-generic kernel has one instance with no arguments.
    pub instances: Vec<Instance>,
    pub launch_bounds: Option<LaunchBounds>,
    /// `#[launch(...)]`, checked; resolved per instance by `expand`.
    pub launch: Option<Launch>,
    /// `#[cluster_launch(x, y, z)]`: blocks per cluster, checked; resolved per instance
    /// by `expand` (a count may name a const generic).
    pub cluster: Option<[Extent; 3]>,
    /// `#[variant_of(kernel)]`: the kernel this one is a variant of.
    pub variant_of: Option<String>,
    /// `#[tensor_maps(...)]`, checked.
    pub tensor_maps: Option<KernelTensorMaps>,
    /// `#[tune(...)]`, as the descriptor records it.
    pub tune: Option<oxide_abi::tune::Tune>,
    /// `#[dependent_launch]`.
    pub dependent_launch: bool,
}

pub struct Param {
    /// The binding as written (`x`), for the generated call.
    pub ident: Ident,
    pub kind: ParamKind,
    pub elem: Elem,
    pub mutable: bool,
    /// Shaped arrays only: rank, layout and dimension names.
    pub array: Option<ArrayParam>,
    /// Slices only: the length `#[shapes(x[n])]` gives (a name or a decimal number).
    pub length: Option<String>,
}

/// The scalar type, or element type of a slice or pointer.
#[derive(Clone)]
pub enum Elem {
    Scalar(ScalarType),
    /// The kernel's n-th type-or-const generic parameter (a type parameter).
    Generic(usize),
    /// A type that is not a scalar (a struct, enum, union, tuple, `[T; N]`), as
    /// written: a value parameter's type or a slice's element (`crate::records`).
    Record(Box<Type>),
}

pub struct Instance {
    pub args: Vec<InstanceArg>,
    pub entry: String,
}

impl Instance {
    /// `ty` with this instance's generic arguments in place of the kernel's parameters.
    pub fn bind(&self, ty: &Type) -> Type {
        crate::record_types::bind(ty, |name| {
            self.args
                .iter()
                .find(|a| a.param == *name)
                .map(|a| &a.value)
        })
    }
}

pub struct InstanceArg {
    pub param: Ident,
    pub is_const: bool,
    pub value: GenericArgument,
    /// The argument as written, in compact form (`f32`, `-1`): the descriptor's
    /// `value` and, through `entry_symbol`, part of the entry name.
    pub text: String,
    /// The scalar type this argument names, if it names one.
    pub scalar: Option<ScalarType>,
}

impl Kernel {
    /// The concrete type of `param` in `instance`. Validation guarantees that every
    /// type parameter used by a parameter is bound to a scalar in every instance.
    pub fn elem_type(&self, param: &Param, instance: &Instance) -> ScalarType {
        match &param.elem {
            Elem::Scalar(t) => *t,
            Elem::Generic(i) => instance.args[*i].scalar.expect("validated"),
            Elem::Record(ty) => crate::record_types::lane_scalar(&instance.bind(ty)),
        }
    }
}

/// The names an attribute has given so far: each may come once.
#[derive(Default)]
struct Seen(Vec<String>);

impl Seen {
    /// Whether `name` comes for the first time (then it is recorded); a repeat is the
    /// error "`name` `twice`" at `span`.
    fn first(&mut self, name: &str, span: Span, twice: &str, errors: &mut Errors) -> bool {
        if self.contains(name) {
            errors.push(span, format!("`{name}` {twice}"));
            return false;
        }
        self.0.push(name.to_string());
        true
    }

    fn contains(&self, name: &str) -> bool {
        self.0.iter().any(|k| k == name)
    }
}

/// Collects errors so that one expansion reports every broken rule.
#[derive(Default)]
struct Errors(Option<syn::Error>);

impl Errors {
    fn push(&mut self, span: Span, message: impl std::fmt::Display) {
        self.add(syn::Error::new(span, message));
    }

    /// An error spanning all of `tokens` (a span from `Spanned` covers only the first
    /// token on stable Rust).
    fn push_spanned(&mut self, tokens: &impl ToTokens, message: impl std::fmt::Display) {
        self.add(syn::Error::new_spanned(tokens, message));
    }

    fn add(&mut self, e: syn::Error) {
        match &mut self.0 {
            Some(all) => all.combine(e),
            None => self.0 = Some(e),
        }
    }
}

pub fn validate(input: KernelInput) -> syn::Result<Kernel> {
    let mut errors = Errors::default();
    let KernelInput {
        func,
        instances,
        launch_bounds,
        launch,
        shapes,
        cluster,
        variant_of,
        tensor_maps,
        tune,
        dependent_launch,
        host_instanced,
    } = input;
    let sig = &func.sig;
    let name = sig.ident.unraw().to_string();

    check_signature(&func, &mut errors);
    check_name(&sig.ident, "kernel", &mut errors);

    // Type and const parameters, in order; lifetimes are irrelevant to the ABI.
    let generics: Vec<(&Ident, bool)> = sig
        .generics
        .params
        .iter()
        .filter_map(|p| match p {
            GenericParam::Type(t) => Some((&t.ident, false)),
            GenericParam::Const(c) => Some((&c.ident, true)),
            GenericParam::Lifetime(_) => None,
        })
        .collect();

    let mut params: Vec<Param> = sig
        .inputs
        .iter()
        .filter_map(|arg| check_param(arg, &generics, sig.unsafety.is_some(), &mut errors))
        .collect();
    if let Some(shapes) = shapes {
        shape::check_shapes(shapes, &mut params, &mut errors);
    }

    let launch_bounds = launch_bounds.and_then(|lb| check_launch_bounds(lb, &mut errors));
    let launch =
        launch.and_then(|l| check_launch(l, &params, &generics, launch_bounds, &mut errors));
    let tune_given = tune.is_some();
    let tune = tune.and_then(|t| {
        tune::check_tune(
            t,
            &generics,
            &params,
            launch.as_ref(),
            launch_bounds,
            &mut errors,
        )
    });
    let instances = match &tune {
        Some(plan) if !plan.groups.is_empty() => {
            tune::tuned_instances(&name, sig, &generics, plan, instances, &params, &mut errors)
        }
        _ if host_instanced && instances.is_empty() => {
            Vec::new() // cuda-oxide's host code would have instantiated it
        }
        // A #[tune] that failed has its own errors; its kernel's instances would only
        // add a cascade.
        None if tune_given && !generics.is_empty() => Vec::new(),
        _ => check_instances(&name, sig, &generics, instances, &params, &mut errors),
    };
    if let Some(l) = &launch {
        launch::check_tile_values(l, &instances, &mut errors);
    }
    let cluster = cluster.and_then(|c| check_cluster(c, &generics, &mut errors));
    if let Some(c) = &cluster {
        check_cluster_values(c, &instances, &mut errors);
    }
    let variant_of = variant_of.and_then(|v| variant::check_variant(v, &name, &mut errors));
    let tensor_maps =
        tensor_maps.and_then(|t| variant::check_tensor_maps(t, &params, &generics, &mut errors));
    if let Some(t) = &tensor_maps {
        t.check_values(&instances, &mut errors);
    }

    match errors.0 {
        Some(e) => Err(e),
        None => Ok(Kernel {
            is_unsafe: func.sig.unsafety.is_some(),
            func,
            name,
            params,
            instances,
            launch_bounds,
            launch,
            cluster,
            variant_of,
            tensor_maps,
            tune: tune.map(|t| t.descriptor),
            dependent_launch,
        }),
    }
}

fn check_signature(func: &ItemFn, errors: &mut Errors) {
    let sig = &func.sig;
    if let Some(t) = &sig.asyncness {
        errors.push(
            t.span,
            "`async` kernels are not supported: a kernel is a plain `fn`",
        );
    }
    if let Some(t) = &sig.constness {
        errors.push(
            t.span,
            "`const fn` kernels are not supported: remove `const`",
        );
    }
    if let Some(abi) = &sig.abi {
        errors.push_spanned(
            abi,
            "`extern` kernels are not supported: #[kernel] generates the entry point \
             and its ABI; remove the `extern`",
        );
    }
    if let Some(v) = &sig.variadic {
        errors.push_spanned(v, "variadic kernels are not supported");
    }
    if let ReturnType::Type(_, ty) = &sig.output {
        let is_unit = matches!(&**ty, Type::Tuple(t) if t.elems.is_empty());
        if !is_unit {
            errors.push_spanned(
                ty,
                "a kernel must return `()`: write results through a `DisjointSlice<T>` \
                 parameter",
            );
        }
    }
}

fn check_name(ident: &Ident, what: &str, errors: &mut Errors) {
    if ident.unraw().to_string().starts_with(RESERVED_PREFIX) {
        errors.push(
            ident.span(),
            format!(
                "{what} names starting with `{RESERVED_PREFIX}` are reserved for code \
                 that #[kernel] generates; rename it"
            ),
        );
    }
}

fn check_param(
    arg: &FnArg,
    generics: &[(&Ident, bool)],
    is_unsafe: bool,
    errors: &mut Errors,
) -> Option<Param> {
    let typed = match arg {
        FnArg::Receiver(r) => {
            errors.push_spanned(
                r,
                "a kernel is a free function: it cannot take `self`; move it out of the \
                 `impl` block",
            );
            return None;
        }
        FnArg::Typed(t) => t,
    };
    let ident = match &*typed.pat {
        Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => Some(&p.ident),
        other => {
            errors.push_spanned(
                other,
                "kernel parameters must be plain names (`x` or `mut x`), not patterns: \
                 the name is part of the kernel's signature in Python",
            );
            None
        }
    };
    if let Some(ident) = ident {
        check_name(ident, "parameter", errors);
    }
    let shaped = match strip(&typed.ty) {
        Type::Path(p) if p.qself.is_none() => shape::classify_array(p, &typed.ty, generics),
        _ => None,
    };
    let (kind, elem, mutable, array) = match shaped {
        Some(Ok((kind, elem, array))) => (kind, elem, kind.always_mutable(), Some(array)),
        Some(Err(e)) => {
            errors.add(e);
            return None;
        }
        None => match classify(&typed.ty, generics) {
            Ok((kind, elem, mutable)) => (kind, elem, mutable, None),
            Err(e) => {
                errors.add(e);
                return None;
            }
        },
    };
    if let (ParamKind::AtomicSlice, Elem::Scalar(t)) = (kind, &elem) {
        use ScalarType::*;
        if !matches!(t, U32 | I32 | U64 | I64 | F32 | F64) {
            errors.push_spanned(
                &typed.ty,
                format!(
                    "`AtomicSlice<{}>` is not supported: GPU atomics work on u32, i32, u64, \
                     i64, f32 and f64",
                    t.rust_name()
                ),
            );
        }
    }
    // A raw pointer is fine in a safe kernel, as in cuda-oxide: using it takes an
    // `unsafe` block anyway. `&mut [T]` is not: safe code could race through it.
    if !is_unsafe && kind == ParamKind::MutSlice {
        errors.push_spanned(
            &typed.ty,
            "`&mut [T]` parameters are only allowed in `unsafe fn` kernels (every thread \
             could write anywhere): make the kernel `unsafe fn` or use DisjointSlice<T>",
        );
    }
    Some(Param {
        ident: ident?.clone(),
        kind,
        elem,
        mutable,
        array,
        length: None,
    })
}

fn unsupported(ty: &Type) -> syn::Error {
    let scalars: Vec<&str> = ScalarType::ALL.iter().map(|t| t.rust_name()).collect();
    syn::Error::new_spanned(
        ty,
        format!(
            "unsupported kernel parameter type `{}`; supported: the scalars {}; `&[T]`; \
             `DisjointSlice<T>`; `AtomicSlice<T>`; `Array2<T>`, `DisjointArray2<T>` (ranks 1 to 3, \
             `Strided` layouts); and in `unsafe fn` kernels `&mut [T]`, `*const T`, \
             `*mut T`; where T is one of those scalars or a type parameter of the kernel; \
             and `Copy` structs, enums, unions, tuples and arrays `[T; N]`, by value or as T",
            compact(ty),
            scalars.join(", "),
        ),
    )
}

fn impl_trait(ty: &Type) -> syn::Error {
    syn::Error::new_spanned(
        ty,
        "argument-position impl Trait is not supported; add a type parameter and list \
         instances, as in #[kernel(f32, f64)]",
    )
}

/// See through `(T)` and the invisible groups of `macro_rules!` expansions.
fn strip(ty: &Type) -> &Type {
    match ty {
        Type::Paren(p) => strip(&p.elem),
        Type::Group(g) => strip(&g.elem),
        other => other,
    }
}

/// Parameter kind, element type and mutability of a parameter type.
fn classify(ty: &Type, generics: &[(&Ident, bool)]) -> Result<(ParamKind, Elem, bool), syn::Error> {
    match strip(ty) {
        Type::ImplTrait(_) => Err(impl_trait(ty)),
        Type::Reference(r) => match strip(&r.elem) {
            Type::Slice(s) => {
                let elem = element_or_record(&s.elem, generics)?;
                Ok(match r.mutability {
                    Some(_) => (ParamKind::MutSlice, elem, true),
                    None => (ParamKind::Slice, elem, false),
                })
            }
            _ => Err(unsupported(ty)),
        },
        Type::Ptr(p) => {
            let elem = element_or_record(&p.elem, generics)?;
            Ok((ParamKind::Pointer, elem, p.mutability.is_some()))
        }
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last().expect("a path has a segment");
            let kind = match last.ident.to_string().as_str() {
                "DisjointSlice" => Some(ParamKind::DisjointSlice),
                "AtomicSlice" => Some(ParamKind::AtomicSlice),
                _ => None,
            };
            if let Some(kind) = kind {
                let PathArguments::AngleBracketed(args) = &last.arguments else {
                    return Err(unsupported(ty));
                };
                let mut types = args.args.iter().filter_map(|a| match a {
                    GenericArgument::Type(t) => Some(Ok(t)),
                    GenericArgument::Lifetime(_) => None,
                    _ => Some(Err(unsupported(ty))),
                });
                let elem = |t: &Type| match kind {
                    ParamKind::AtomicSlice => element(t, generics),
                    _ => element_or_record(t, generics),
                };
                match (types.next(), types.next()) {
                    (Some(t), None) => Ok((kind, elem(t?)?, true)),
                    (Some(t), Some(space)) => {
                        index_space_arg(kind, space?, ty)?;
                        Ok((kind, elem(t?)?, true))
                    }
                    _ => Err(unsupported(ty)),
                }
            } else {
                match element_or_record(ty, generics)? {
                    Elem::Record(r) => Ok((ParamKind::Value, Elem::Record(r), false)),
                    scalar => Ok((ParamKind::Scalar, scalar, false)),
                }
            }
        }
        Type::Array(_) | Type::Tuple(_) => {
            Ok((ParamKind::Value, element_or_record(ty, generics)?, false))
        }
        _ => Err(unsupported(ty)),
    }
}

/// `DisjointSlice<T, S>`'s index space (`Index2D<64>`, `WarpIndex`): one more type
/// argument, allowed there only; the device crate's sealed trait checks which.
fn index_space_arg(kind: ParamKind, space: &Type, ty: &Type) -> Result<(), syn::Error> {
    match (kind, space) {
        (ParamKind::DisjointSlice, Type::Path(_)) => Ok(()),
        _ => Err(unsupported(ty)),
    }
}

/// A scalar, a type parameter, or else a record type (`crate::records`) when it is one.
fn element_or_record(ty: &Type, generics: &[(&Ident, bool)]) -> Result<Elem, syn::Error> {
    match element(ty, generics) {
        Ok(e) => Ok(e),
        Err(_) if crate::record_types::is_record(strip(ty)) => {
            Ok(Elem::Record(Box::new(ty.clone())))
        }
        Err(e) => Err(e),
    }
}

/// A scalar type name or one of the kernel's type parameters.
fn element(ty: &Type, generics: &[(&Ident, bool)]) -> Result<Elem, syn::Error> {
    let ty = strip(ty);
    if let Type::ImplTrait(_) = ty {
        return Err(impl_trait(ty));
    }
    let ident = match ty {
        Type::Path(p) if p.qself.is_none() => p.path.get_ident(),
        _ => None,
    };
    let Some(ident) = ident else {
        return Err(unsupported(ty));
    };
    if let Some(i) = generics
        .iter()
        .position(|(g, is_const)| !is_const && *g == ident)
    {
        return Ok(Elem::Generic(i));
    }
    ScalarType::from_rust_name(&ident.to_string())
        .map(Elem::Scalar)
        .ok_or_else(|| unsupported(ty))
}

fn check_instances(
    name: &str,
    sig: &syn::Signature,
    generics: &[(&Ident, bool)],
    instances: Vec<InstanceSyntax>,
    params: &[Param],
    errors: &mut Errors,
) -> Vec<Instance> {
    let n = generics.len();
    if n == 0 {
        if let Some(first) = instances.first() {
            errors.push(
                first.span,
                format!(
                    "`{name}` is not generic, so it takes no instances: remove them from \
                     #[kernel(...)]"
                ),
            );
        }
        return vec![Instance {
            args: Vec::new(),
            entry: entry_symbol(name, &[]),
        }];
    }
    let names: Vec<String> = generics.iter().map(|(g, _)| g.to_string()).collect();
    let example = if n == 1 {
        "#[kernel(f32, f64)]".to_string()
    } else {
        let instance = |ty: &str, value: &str| {
            let args: Vec<&str> = generics
                .iter()
                .map(|(_, c)| if *c { value } else { ty })
                .collect();
            format!("({})", args.join(", "))
        };
        format!(
            "#[kernel({}, {})]",
            instance("f32", "4"),
            instance("f64", "8")
        )
    };
    if instances.is_empty() {
        errors.push_spanned(
            &sig.generics,
            format!("generic kernel `{name}` has no instances; list its instances: {example}"),
        );
        return Vec::new();
    }

    let mut checked: Vec<Instance> = Vec::new();
    for inst in instances {
        if !inst.binds(n) {
            errors.push(
                inst.span,
                format!(
                    "kernel `{name}` has {n} generic parameter{} ({}): each instance must \
                     be {}, e.g. {example}",
                    if n == 1 { "" } else { "s" },
                    names.join(", "),
                    arity(n, "one argument"),
                ),
            );
            continue;
        }
        let args: Vec<InstanceArg> = generics
            .iter()
            .zip(inst.args)
            .filter_map(|(&(param, is_const), value)| instance_arg(param, is_const, value, errors))
            .collect();
        if args.len() != n {
            continue;
        }
        check_instance_types(&args, params, errors);
        let texts: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
        let entry = entry_symbol(name, &texts);
        if checked.iter().any(|c| c.entry == entry) {
            errors.push(
                inst.span,
                format!("instance listed twice (entry point `{entry}`)"),
            );
            continue;
        }
        checked.push(Instance { args, entry });
    }
    checked
}

/// What an instance of `n` generic parameters is: `one` for a single one, else a tuple.
fn arity(n: usize, one: &str) -> String {
    if n == 1 {
        one.to_string()
    } else {
        format!("a parenthesised tuple of {n}")
    }
}

fn instance_arg(
    param: &Ident,
    is_const: bool,
    value: GenericArgument,
    errors: &mut Errors,
) -> Option<InstanceArg> {
    let fits = match &value {
        GenericArgument::Type(Type::Path(p)) if is_const => p.path.get_ident().is_some(),
        GenericArgument::Type(_) => !is_const,
        GenericArgument::Const(_) => is_const,
        _ => false,
    };
    if !fits {
        let want = if is_const { "a const value" } else { "a type" };
        errors.push_spanned(
            &value,
            format!(
                "`{param}` is a generic {}: give {want} here",
                if is_const { "const" } else { "type" }
            ),
        );
        return None;
    }
    let scalar = match &value {
        GenericArgument::Type(Type::Path(p)) if !is_const => p
            .path
            .get_ident()
            .and_then(|i| ScalarType::from_rust_name(&i.to_string())),
        _ => None,
    };
    Some(InstanceArg {
        param: param.clone(),
        is_const,
        // Not `compact(&value)`: syn prints a non-literal const argument in braces.
        text: match &value {
            GenericArgument::Const(e) => compact(e),
            other => compact(other),
        },
        scalar,
        value,
    })
}

/// A type parameter that a kernel parameter uses as its (element) type must be a
/// scalar in every instance: that is what crosses the launch ABI.
fn check_instance_types(args: &[InstanceArg], params: &[Param], errors: &mut Errors) {
    for (i, arg) in args.iter().enumerate() {
        let user = params
            .iter()
            .find(|p| matches!(p.elem, Elem::Generic(g) if g == i));
        if let (Some(user), None) = (user, arg.scalar) {
            let scalars: Vec<&str> = ScalarType::ALL.iter().map(|t| t.rust_name()).collect();
            errors.push_spanned(
                &arg.value,
                format!(
                    "`{}` cannot cross the kernel ABI: parameter `{}` uses `{}`, so each \
                     instance must bind it to one of {}",
                    arg.text,
                    user.ident.unraw(),
                    arg.param,
                    scalars.join(", "),
                ),
            );
        }
    }
}

/// Tokens as written, without the spaces `to_string` puts between every two tokens
/// (kept between two words and after `,` and `;`: `impl Copy`, `(f32, u8)`, but
/// `Vec<f32>`, `-1`).
pub fn compact(tokens: &impl ToTokens) -> String {
    let text = tokens.to_token_stream().to_string();
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let last = out.chars().last();
        let keep = (word(last) && word(chars.peek().copied())) || matches!(last, Some(',' | ';'));
        if c == ' ' && !keep {
            continue;
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn compact_keeps_only_meaningful_spaces() {
        assert_eq!(compact(&quote!(Vec<f32>)), "Vec<f32>");
        assert_eq!(compact(&quote!((f32, u8))), "(f32, u8)");
        assert_eq!(compact(&quote!(impl Copy)), "impl Copy");
        assert_eq!(compact(&quote!(-1)), "-1");
        assert_eq!(compact(&quote!([u8; 4])), "[u8; 4]");
    }

    #[test]
    fn lifetimes_do_not_count_as_generic_parameters() {
        let input = crate::parse::parse(
            quote!(f32),
            quote!(
                fn k<'a, T>(x: &'a [T]) {}
            ),
        )
        .unwrap();
        let kernel = validate(input).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(kernel.instances[0].entry, "k_f32");
        let ty = kernel.elem_type(&kernel.params[0], &kernel.instances[0]);
        assert_eq!(ty, ScalarType::F32);
    }
}
