//! Parsing: the `#[kernel(...)]` arguments, the function it sits on, and the
//! `#[launch_bounds(...)]` attribute that `#[kernel]` consumes. Only syntax here; the
//! rules about what a kernel may be live in `validate`.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, GenericArgument, Ident, ItemFn, LitInt, Token, parenthesized, parse_quote};

/// A parse error replaced by the attribute's usage line, at the same place.
trait OrUsage<T> {
    fn or_usage(self, usage: &str) -> syn::Result<T>;
}

impl<T> OrUsage<T> for syn::Result<T> {
    fn or_usage(self, usage: &str) -> syn::Result<T> {
        self.map_err(|e| syn::Error::new(e.span(), usage))
    }
}

/// After an item: whether a comma and another item follow (a trailing comma ends it).
fn another(input: ParseStream) -> syn::Result<bool> {
    if input.is_empty() {
        return Ok(false);
    }
    input.parse::<Token![,]>()?;
    Ok(!input.is_empty())
}

/// Name of the inert attribute that `#[kernel]` reads and removes.
pub const LAUNCH_BOUNDS_ATTR: &str = "launch_bounds";
/// The launch policy's attribute, read and removed by `#[kernel]` likewise.
pub const LAUNCH_ATTR: &str = "launch";
/// The shape contract's attribute, read and removed by `#[kernel]` likewise.
pub const SHAPES_ATTR: &str = "shapes";
/// The thread-block cluster's attribute (cuda-oxide's spelling), likewise.
pub const CLUSTER_ATTR: &str = "cluster_launch";
/// `#[variant_of(kernel)]`, likewise.
pub const VARIANT_ATTR: &str = "variant_of";
/// `#[tensor_maps(param, array(rows = R), ...)]`, likewise.
pub const TENSOR_MAPS_ATTR: &str = "tensor_maps";
/// `#[tune(NAME = [v, ...], ...)]`, likewise.
pub const TUNE_ATTR: &str = "tune";
/// `#[dependent_launch]` (no arguments), likewise.
pub const DEPENDENT_ATTR: &str = "dependent_launch";

/// Everything written at the kernel's definition, parsed but not yet checked.
pub struct KernelInput {
    /// The function, with `#[launch_bounds]` already removed.
    pub func: ItemFn,
    pub instances: Vec<InstanceSyntax>,
    pub launch_bounds: Option<LaunchBoundsSyntax>,
    pub launch: Option<LaunchSyntax>,
    pub shapes: Option<ShapesSyntax>,
    pub cluster: Option<ClusterSyntax>,
    pub variant_of: Option<VariantSyntax>,
    pub tensor_maps: Option<TensorMapsSyntax>,
    pub tune: Option<TuneSyntax>,
    /// `#[dependent_launch]` was given.
    pub dependent_launch: bool,
    /// Under `#[cuda_module]`, a generic kernel without listed instances is
    /// instantiated by cuda-oxide's host launches: here it builds with none
    /// (`compat::HOST_INSTANCED`).
    pub host_instanced: bool,
}

/// `#[shapes(a[m, k], b[k, n], c[m, n])]`: one dimension list per shaped array.
pub struct ShapesSyntax {
    pub entries: Vec<ShapeEntry>,
}

pub struct ShapeEntry {
    pub param: Ident,
    pub dims: Vec<ShapeDim>,
}

pub enum ShapeDim {
    /// Shared with every other dimension of that name.
    Name(Ident),
    /// The extent must be this number.
    Fixed(LitInt),
    /// `_`: any extent.
    Any,
}

impl Parse for ShapesSyntax {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let usage = "expected #[shapes(param[dim, ...], ...)], e.g. \
                     #[shapes(a[m, k], b[k, n], c[m, n])]; a dim is a name, a number or `_`";
        let mut entries = Vec::new();
        while !input.is_empty() {
            let param: Ident = input.call(Ident::parse_any).or_usage(usage)?;
            let content;
            syn::bracketed!(content in input);
            let mut dims = Vec::new();
            while !content.is_empty() {
                dims.push(if content.peek(Token![_]) {
                    content.parse::<Token![_]>()?;
                    ShapeDim::Any
                } else if content.peek(LitInt) {
                    ShapeDim::Fixed(content.parse()?)
                } else {
                    ShapeDim::Name(content.parse().or_usage(usage)?)
                });
                if content.is_empty() {
                    break;
                }
                content.parse::<Token![,]>()?;
            }
            entries.push(ShapeEntry { param, dims });
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok(ShapesSyntax { entries })
    }
}

/// `#[launch(kind(param, key = value, ...))]`, e.g.
/// `#[launch(elementwise(out, per_thread = vector))]`.
pub struct LaunchSyntax {
    pub kind: Ident,
    pub over: Ident,
    /// `key = value` options, value an integer literal or an identifier.
    pub options: Vec<(Ident, LaunchValue)>,
}

pub enum LaunchValue {
    Int(LitInt),
    Ident(Ident),
    /// `(16, 16)`: up to three extents (x, y, z), for `tiles`' `block` and `tile`.
    Tuple(Vec<TupleItem>, Span),
}

/// One extent of a `(x, y, z)` launch value: an integer, or (in `tile`) the name of a
/// const generic parameter, resolved per instance.
pub enum TupleItem {
    Int(LitInt),
    Name(Ident),
}

impl TupleItem {
    pub fn span(&self) -> Span {
        match self {
            TupleItem::Int(l) => l.span(),
            TupleItem::Name(i) => i.span(),
        }
    }
}

impl LaunchValue {
    pub fn span(&self) -> Span {
        match self {
            LaunchValue::Int(l) => l.span(),
            LaunchValue::Ident(i) => i.span(),
            LaunchValue::Tuple(_, span) => *span,
        }
    }
}

impl Parse for TupleItem {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.peek(LitInt) {
            Ok(TupleItem::Int(input.parse()?))
        } else {
            Ok(TupleItem::Name(input.parse()?))
        }
    }
}

impl Parse for LaunchSyntax {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let usage = "expected #[launch(policy(param, key = value, ...))], e.g. \
                     #[launch(elementwise(out, per_thread = vector))]";
        let kind: Ident = input.parse().or_usage(usage)?;
        let content;
        parenthesized!(content in input);
        let over: Ident = content.parse().or_usage(usage)?;
        let mut options = Vec::new();
        while another(&content)? {
            let key: Ident = content.parse()?;
            content.parse::<Token![=]>()?;
            let value = if content.peek(LitInt) {
                LaunchValue::Int(content.parse()?)
            } else if content.peek(syn::token::Paren) {
                let inner;
                let parens = parenthesized!(inner in content);
                let items = Punctuated::<TupleItem, Token![,]>::parse_terminated(&inner)?;
                LaunchValue::Tuple(items.into_iter().collect(), parens.span.join())
            } else {
                LaunchValue::Ident(content.parse()?)
            };
            options.push((key, value));
        }
        if !input.is_empty() {
            return Err(syn::Error::new(input.span(), usage));
        }
        Ok(LaunchSyntax {
            kind,
            over,
            options,
        })
    }
}

/// `#[variant_of(kernel)]`: the kernel (of another crate) this one is a variant of.
pub struct VariantSyntax {
    pub kernel: Ident,
}

impl Parse for VariantSyntax {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let usage = "expected #[variant_of(kernel)], naming the kernel this one is a \
                     faster variant of, e.g. #[variant_of(gemm_bf16)]";
        let kernel = Ident::parse_any(input).or_usage(usage)?;
        if !input.is_empty() {
            return Err(syn::Error::new(input.span(), usage));
        }
        Ok(VariantSyntax { kernel })
    }
}

/// `#[tensor_maps(maps, a(rows = 128), b(rows = 64, bytes = 128, swizzle = 128))]`: the
/// derived parameter, then one map per entry (an array parameter and its box; `rows`
/// may name a const generic parameter, `a(rows = BM)`, resolved per instance).
pub struct TensorMapsSyntax {
    pub param: Ident,
    pub maps: Vec<TensorMapSyntax>,
}

pub struct TensorMapSyntax {
    pub array: Ident,
    /// Each option's value: an integer, or (`rows` only) a const generic's name.
    pub options: Vec<(Ident, TupleItem)>,
}

impl Parse for TensorMapsSyntax {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let usage = "expected #[tensor_maps(param, array(rows = R), ...)], e.g. \
                     #[tensor_maps(maps, a(rows = 128), b(rows = 64))]";
        let param: Ident = input.parse().or_usage(usage)?;
        let mut maps = Vec::new();
        while another(input)? {
            let array: Ident = input.parse().or_usage(usage)?;
            let content;
            parenthesized!(content in input);
            let mut options = Vec::new();
            while !content.is_empty() {
                let key: Ident = content.parse()?;
                content.parse::<Token![=]>()?;
                options.push((key, content.parse::<TupleItem>()?));
                if !content.is_empty() {
                    content.parse::<Token![,]>()?;
                }
            }
            maps.push(TensorMapSyntax { array, options });
        }
        Ok(TensorMapsSyntax { param, maps })
    }
}

/// `#[tune(TILE = [64, 128], block = [128, 256])]`: candidate values per name (a const
/// generic parameter of the kernel or a launch parameter), or per tuple of const generic
/// names (`(BN, SPLIT) = [(256, 1), (128, 3)]`: only the combinations listed).
pub struct TuneSyntax {
    pub entries: Vec<TuneEntry>,
    pub span: Span,
}

pub struct TuneEntry {
    /// The name, or the names of a tuple (`grouped`).
    pub names: Vec<Ident>,
    pub grouped: bool,
    /// The values as written: integer literals, possibly negated (tuples of them for a
    /// group).
    pub values: Vec<syn::Expr>,
    pub span: Span,
}

impl TuneEntry {
    /// The first name (the only one of an entry that is not grouped).
    pub fn name(&self) -> &Ident {
        &self.names[0]
    }
}

impl Parse for TuneSyntax {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let usage = "expected #[tune(NAME = [value, ...], ...)], e.g. \
                     #[tune(TILE = [64, 128], block = [128, 256])]: a const generic \
                     parameter or a launch parameter, and its candidate values, or a tuple \
                     of const generic parameters and the tuples of values to try together, \
                     e.g. (BN, SPLIT) = [(256, 1), (128, 3)] (and optionally key = [param, \
                     ...], scalar parameters that bucket calls)";
        let span = input.span();
        let mut entries = Vec::new();
        while !input.is_empty() {
            let (names, grouped, first) = if input.peek(syn::token::Paren) {
                let inner;
                let paren = syn::parenthesized!(inner in input);
                let names = inner
                    .parse_terminated(Ident::parse_any, Token![,])
                    .or_usage(usage)?;
                (names.into_iter().collect(), true, paren.span.join())
            } else {
                let name: Ident = input.call(Ident::parse_any).or_usage(usage)?;
                let first = name.span();
                (vec![name], false, first)
            };
            if names.is_empty() {
                return Err(syn::Error::new(first, usage));
            }
            input.parse::<Token![=]>().or_usage(usage)?;
            let list: syn::ExprArray = input.parse().or_usage(usage)?;
            let span = first.join(list.bracket_token.span.join()).unwrap_or(first);
            entries.push(TuneEntry {
                names,
                grouped,
                values: list.elems.into_iter().collect(),
                span,
            });
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok(TuneSyntax { entries, span })
    }
}

/// One entry of `#[kernel(f32, f64)]` or `#[kernel((f32, 4), (f64, 8))]`.
pub struct InstanceSyntax {
    pub args: Vec<GenericArgument>,
    /// Written as a parenthesised tuple (required with several generic parameters).
    pub is_tuple: bool,
    pub span: Span,
}

impl InstanceSyntax {
    /// Whether it binds `n` generic parameters: `n` arguments, parenthesised when `n > 1`.
    pub fn binds(&self, n: usize) -> bool {
        (n <= 1 || self.is_tuple) && self.args.len() == n
    }
}

/// `#[launch_bounds(max_threads)]` or `#[launch_bounds(max_threads, min_blocks)]`.
pub struct LaunchBoundsSyntax {
    pub max_threads: LitInt,
    pub min_blocks: Option<LitInt>,
}

/// `#[cluster_launch(x)]`, `#[cluster_launch(x, y)]` or `#[cluster_launch(x, y, z)]`:
/// each an integer, or the name of a const generic parameter (resolved per instance).
pub struct ClusterSyntax {
    pub dims: Vec<TupleItem>,
}

impl Parse for ClusterSyntax {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let span = input.span();
        let args = Punctuated::<TupleItem, Token![,]>::parse_terminated(input).map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected #[cluster_launch(x)], #[cluster_launch(x, y)] or \
                 #[cluster_launch(x, y, z)] with integer blocks per cluster (or const generic \
                 parameters of the kernel), e.g. #[cluster_launch(2, 1, 1)]",
            )
        })?;
        let dims: Vec<TupleItem> = args.into_iter().collect();
        if dims.is_empty() || dims.len() > 3 {
            return Err(syn::Error::new(
                dims.get(3).map_or(span, TupleItem::span),
                "expected #[cluster_launch(x)], #[cluster_launch(x, y)] or \
                 #[cluster_launch(x, y, z)]: one to three blocks-per-cluster counts",
            ));
        }
        Ok(ClusterSyntax { dims })
    }
}

/// The `#[kernel(...)]` argument list.
struct InstanceList(Vec<InstanceSyntax>);

impl Parse for InstanceList {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let mut instances = Vec::new();
        while !input.is_empty() {
            instances.push(input.parse()?);
            if input.is_empty() {
                break;
            }
            input.parse::<Token![,]>()?;
        }
        Ok(InstanceList(instances))
    }
}

impl Parse for InstanceSyntax {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.peek(syn::token::Paren) {
            let content;
            let parens = parenthesized!(content in input);
            let args = Punctuated::<InstanceArg, Token![,]>::parse_terminated(&content)?;
            Ok(InstanceSyntax {
                args: args.into_iter().map(|a| a.0).collect(),
                is_tuple: true,
                span: parens.span.join(),
            })
        } else {
            let InstanceArg(arg) = input.parse()?;
            Ok(InstanceSyntax {
                span: arg.span(),
                args: vec![arg],
                is_tuple: false,
            })
        }
    }
}

/// A generic argument as a turbofish takes it, plus negative literals (`-1`), which
/// syn's `GenericArgument` does not parse.
struct InstanceArg(GenericArgument);

impl Parse for InstanceArg {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        if input.peek(Token![-]) && input.peek2(syn::Lit) {
            let expr = syn::Expr::Unary(syn::ExprUnary {
                attrs: Vec::new(),
                op: syn::UnOp::Neg(input.parse()?),
                expr: Box::new(syn::Expr::Lit(input.parse()?)),
            });
            return Ok(InstanceArg(GenericArgument::Const(expr)));
        }
        input.parse().map(InstanceArg)
    }
}

impl Parse for LaunchBoundsSyntax {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let args = Punctuated::<LitInt, Token![,]>::parse_terminated(input)?;
        let mut args = args.into_iter();
        match (args.next(), args.next(), args.next()) {
            (Some(max_threads), min_blocks, None) => Ok(LaunchBoundsSyntax {
                max_threads,
                min_blocks,
            }),
            (_, _, extra) => Err(syn::Error::new(
                extra.map_or(input.span(), |e| e.span()),
                "expected #[launch_bounds(max_threads)] or \
                 #[launch_bounds(max_threads, min_blocks)]",
            )),
        }
    }
}

/// Parse the attribute arguments and the item. On an item that is not a `fn`, say so
/// rather than "expected `fn`".
pub fn parse(attr: TokenStream, item: TokenStream) -> syn::Result<KernelInput> {
    let mut func: ItemFn = syn::parse2(item.clone()).map_err(|_| {
        syn::Error::new(
            first_token_span(item),
            "#[kernel] applies to a free function: `pub fn name(...) { ... }`",
        )
    })?;
    let InstanceList(instances) = syn::parse2(attr)?;
    let launch_bounds = take_launch_bounds(&mut func.attrs);
    let launch = take_attr::<LaunchSyntax>(&mut func.attrs, LAUNCH_ATTR);
    let shapes = take_attr::<ShapesSyntax>(&mut func.attrs, SHAPES_ATTR);
    let cluster = take_attr::<ClusterSyntax>(&mut func.attrs, CLUSTER_ATTR);
    let variant_of = take_attr::<VariantSyntax>(&mut func.attrs, VARIANT_ATTR);
    let tensor_maps = take_attr::<TensorMapsSyntax>(&mut func.attrs, TENSOR_MAPS_ATTR);
    let tune = take_attr::<TuneSyntax>(&mut func.attrs, TUNE_ATTR);
    let dependent_launch = take_flag(&mut func.attrs, DEPENDENT_ATTR);
    let (launch_bounds, launch) = match (launch_bounds, launch) {
        (Ok(lb), Ok(l)) => (lb, l),
        (Err(mut a), Err(b)) => {
            a.combine(b);
            return Err(a);
        }
        (Err(e), _) | (_, Err(e)) => return Err(e),
    };
    let cluster = cluster?;
    Ok(KernelInput {
        func,
        instances,
        launch_bounds,
        launch,
        shapes: shapes?,
        cluster,
        variant_of: variant_of?,
        tensor_maps: tensor_maps?,
        tune: tune?,
        dependent_launch: dependent_launch?,
        host_instanced: false,
    })
}

/// Remove the argument-less attribute `#[name]` from `attrs`: whether it was there.
/// `#[name()]` is the same (`move_below_kernel` writes it so when it was given above
/// `#[kernel]`); arguments or a second copy are errors.
pub fn take_flag(attrs: &mut Vec<Attribute>, name: &str) -> syn::Result<bool> {
    let found = take_attr_with(attrs, name, |attr| match &attr.meta {
        syn::Meta::Path(_) => Ok(()),
        syn::Meta::List(list) if list.tokens.is_empty() => Ok(()),
        _ => Err(syn::Error::new_spanned(
            attr,
            format!("#[{name}] takes no arguments: write #[{name}]"),
        )),
    })?;
    Ok(found.is_some())
}

/// Remove `#[launch_bounds(..)]` from `attrs` and parse it. It is an inert attribute:
/// nothing but `#[kernel]` defines it, so it must not reach the compiler.
pub fn take_launch_bounds(attrs: &mut Vec<Attribute>) -> syn::Result<Option<LaunchBoundsSyntax>> {
    take_attr(attrs, LAUNCH_BOUNDS_ATTR)
}

/// Remove the inert attribute `name` from `attrs` and parse its arguments as `T`.
pub fn take_attr<T: Parse>(attrs: &mut Vec<Attribute>, name: &str) -> syn::Result<Option<T>> {
    take_attr_with(attrs, name, |attr| attr.parse_args::<T>())
}

/// Remove every `#[name ...]` from `attrs`, each read by `read`: the one value, or every
/// error (a second copy is one).
fn take_attr_with<T>(
    attrs: &mut Vec<Attribute>,
    name: &str,
    mut read: impl FnMut(&Attribute) -> syn::Result<T>,
) -> syn::Result<Option<T>> {
    let mut found: Option<T> = None;
    let mut error: Option<syn::Error> = None;
    let mut push = |e: syn::Error| match &mut error {
        Some(all) => all.combine(e),
        None => error = Some(e),
    };
    attrs.retain(|attr| {
        if !is_attr(attr, name) {
            return true;
        }
        match read(attr) {
            Ok(_) if found.is_some() => push(syn::Error::new_spanned(
                attr,
                format!("#[{name}] is given twice; keep one"),
            )),
            Ok(value) => found = Some(value),
            Err(e) => push(e),
        }
        false
    });
    match error {
        Some(e) => Err(e),
        None => Ok(found),
    }
}

/// `#[launch_bounds(..)]` written above `#[kernel]` runs as a macro of its own, before
/// `#[kernel]`: re-emit the function with it placed just below `#[kernel]`, where
/// `#[kernel]` will find it. Without `#[kernel]` it would be silently lost: refuse.
pub fn move_below_kernel(
    name: &str,
    attr: TokenStream,
    item: TokenStream,
) -> syn::Result<TokenStream> {
    let not_a_kernel = |span| {
        syn::Error::new(
            span,
            format!("#[{name}] applies to a #[kernel] function: add #[kernel]"),
        )
    };
    let mut func: ItemFn =
        syn::parse2(item.clone()).map_err(|_| not_a_kernel(first_token_span(item)))?;
    let kernel_at = func
        .attrs
        .iter()
        .position(|a| {
            a.path()
                .segments
                .last()
                .is_some_and(|s| s.ident == "kernel")
        })
        .ok_or_else(|| not_a_kernel(func.sig.ident.span()))?;
    let ident = Ident::new(name, Span::call_site());
    func.attrs
        .insert(kernel_at + 1, parse_quote!(#[#ident(#attr)]));
    Ok(quote!(#func))
}

fn is_attr(attr: &Attribute, name: &str) -> bool {
    attr.path().segments.last().is_some_and(|s| s.ident == name)
}

/// Span of an item's first token, so an error points at the item without repeating it.
pub fn first_token_span(item: TokenStream) -> Span {
    item.into_iter()
        .next()
        .map_or_else(Span::call_site, |t| t.span())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_and_tuple_instances() {
        let input = parse(
            quote!(f32, (f64, -4), { 2 + 2 }),
            quote!(
                fn k() {}
            ),
        )
        .unwrap();
        let shapes: Vec<_> = input
            .instances
            .iter()
            .map(|i| (i.is_tuple, i.args.len()))
            .collect();
        assert_eq!(shapes, [(false, 1), (true, 2), (false, 1)]);
    }

    #[test]
    fn launch_bounds_is_taken_out() {
        let input = parse(
            quote!(),
            quote!(
                #[inline]
                #[launch_bounds(256, 2)]
                fn k() {}
            ),
        )
        .unwrap();
        let lb = input.launch_bounds.unwrap();
        assert_eq!(lb.max_threads.base10_digits(), "256");
        assert_eq!(lb.min_blocks.unwrap().base10_digits(), "2");
        assert_eq!(input.func.attrs.len(), 1);
    }

    #[test]
    fn launch_bounds_arity() {
        for args in [quote!(), quote!(1, 2, 3)] {
            let err = parse(
                quote!(),
                quote!(
                    #[launch_bounds(#args)]
                    fn k() {}
                ),
            )
            .err()
            .unwrap();
            assert!(err.to_string().contains("max_threads, min_blocks"), "{err}");
        }
    }

    #[test]
    fn launch_bounds_above_kernel_moves_below_it() {
        let item = quote!(
            #[inline]
            #[oxide_device::kernel]
            #[cfg(all())]
            fn k() {}
        );
        let moved = move_below_kernel(LAUNCH_BOUNDS_ATTR, quote!(64), item)
            .unwrap()
            .to_string();
        assert!(
            moved.contains("kernel] # [launch_bounds (64)] # [cfg"),
            "{moved}"
        );
        let err = move_below_kernel(
            LAUNCH_BOUNDS_ATTR,
            quote!(64),
            quote!(
                fn k() {}
            ),
        )
        .err()
        .unwrap();
        assert!(err.to_string().contains("add #[kernel]"));
    }

    #[test]
    fn launch_policy_is_taken_out() {
        let input = parse(
            quote!(),
            quote!(
                #[launch(grid_stride(x, per_thread = vector, block = 512))]
                fn k() {}
            ),
        )
        .unwrap();
        let l = input.launch.unwrap();
        assert_eq!(
            (l.kind.to_string(), l.over.to_string()),
            ("grid_stride".into(), "x".into())
        );
        let keys: Vec<String> = l.options.iter().map(|(k, _)| k.to_string()).collect();
        assert_eq!(keys, ["per_thread", "block"]);
        assert!(input.func.attrs.is_empty());
    }

    #[test]
    fn not_a_function() {
        let err = parse(
            quote!(),
            quote!(
                struct S;
            ),
        )
        .err()
        .unwrap();
        assert!(err.to_string().contains("free function"));
    }
}
