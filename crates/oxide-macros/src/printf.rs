//! `gpu_printf!` with Rust format strings. CUDA's `vprintf` formats on the host from a
//! C format string and a packed argument buffer, so each `{}` must become the C
//! conversion for its argument's type, which only the compiler knows. The macro
//! splits the literal into text pieces and placeholders; each placeholder's
//! conversion comes from the argument type's `PrintfArg` constants, and a `const`
//! block joins everything into one NUL-terminated C string at compile time.
//!
//! Placeholders: `{}` and `{:?}` (the value), `{:x}`/`{:X}` (hex), `{:e}` (exponent
//! form), `{:.N}` (N decimals). A literal with no `{}` but arguments and `%` is a C
//! format string, passed through as it is (`gpu_printf!("%d\n", i)` keeps working).

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::{Expr, ExprLit, Ident, Lit, LitStr, Token};

pub fn gpu_printf(input: TokenStream) -> syn::Result<TokenStream> {
    let exprs = Punctuated::<Expr, Token![,]>::parse_terminated.parse2(input)?;
    let mut exprs = exprs.into_iter();
    let format = match exprs.next() {
        Some(Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        })) => s,
        Some(other) => {
            return Err(syn::Error::new_spanned(
                other,
                "gpu_printf! needs a string literal first",
            ));
        }
        None => {
            return Err(syn::Error::new(
                Span::call_site(),
                "gpu_printf! needs a format string",
            ));
        }
    };
    let args: Vec<Expr> = exprs.collect();
    let text = format.value();
    if !text.contains(['{', '}']) && text.contains('%') && !args.is_empty() {
        return Ok(quote!(::oxide_device::gpu_printf_c!(#format, #(#args),*)));
    }
    let (pieces, specs) = split(&text, &format)?;
    if specs.len() != args.len() {
        return Err(syn::Error::new_spanned(
            &format,
            format!(
                "{} placeholders but {} arguments (positional and named arguments are not supported)",
                specs.len(),
                args.len()
            ),
        ));
    }
    let print = quote!(::oxide_device::print);
    let generics: Vec<Ident> = (0..args.len()).map(|i| format_ident!("A{}", i)).collect();
    let values: Vec<Ident> = (0..args.len())
        .map(|i| format_ident!("{}_printf_arg{}", oxide_abi::names::RESERVED_PREFIX, i))
        .collect();
    let spec_pairs = specs.iter().zip(&generics).map(|(spec, g)| {
        let prefix = &spec.prefix;
        let conv = Ident::new(spec.conversion, Span::call_site());
        quote!((#prefix, <#g as #print::PrintfArg>::#conv))
    });
    let indices = 0..args.len();
    let n = args.len();
    Ok(quote! {{
        #[allow(non_snake_case)]
        fn __oxide_printf_format<#(#generics: #print::PrintfArg),*>(#(_: &#generics),*)
            -> &'static [u8; #print::FORMAT_CAPACITY]
        {
            &const { #print::build_format(&[#(#pieces),*], &[#(#spec_pairs),*]) }
        }
        let (#(#values,)*) = (#(#args,)*);
        let __oxide_printf_fmt = __oxide_printf_format(#(&#values),*);
        #[allow(unused_mut)]
        let mut __oxide_printf_args = #print::PrintfArgs::<#n>::default();
        #( __oxide_printf_args.push(#values, #indices); )*
        #print::vprintf_format(__oxide_printf_fmt, &__oxide_printf_args)
    }})
}

struct Spec {
    /// `%` or `%.N`.
    prefix: String,
    /// The `PrintfArg` constant that completes it.
    conversion: &'static str,
}

/// Text pieces (with `%` escaped for C, `{{`/`}}` unescaped) around the placeholders.
fn split(text: &str, lit: &LitStr) -> syn::Result<(Vec<String>, Vec<Spec>)> {
    let error = |msg: String| syn::Error::new_spanned(lit, msg);
    let (mut pieces, mut specs, mut piece) = (Vec::new(), Vec::new(), String::new());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                piece.push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                piece.push('}');
            }
            '{' => {
                let mut inner = String::new();
                loop {
                    match chars.next() {
                        Some('}') => break,
                        Some(ch) => inner.push(ch),
                        None => return Err(error("unclosed `{` in the format string".into())),
                    }
                }
                specs.push(spec(&inner).ok_or_else(|| {
                    error(format!(
                        "unsupported placeholder `{{{inner}}}`; gpu_printf! supports {{}}, {{:?}} and \
                         {{:[#+-0 <>][width][.N][x|X|o|e|g|f]}}"
                    ))
                })?);
                pieces.push(std::mem::take(&mut piece));
            }
            '}' => {
                return Err(error(
                    "unmatched `}` in the format string (write `}}`)".into(),
                ));
            }
            '%' => piece.push_str("%%"),
            other => piece.push(other),
        }
    }
    pieces.push(piece);
    Ok((pieces, specs))
}

/// `{}`, `{:?}`, or `{:[flags][width][.N][conversion]}`: flags `#`, `+`, `-`, `0`, ` `
/// (as C's) and `<`/`>` (left/right alignment, C's `-` and its default), conversions `x`,
/// `X`, `o`, `e`/`E`, `g`/`G`, `f`, `?`. The spec becomes a C conversion that `vprintf`
/// understands (Rust's and C's spellings mostly agree there).
fn spec(inner: &str) -> Option<Spec> {
    let body = match inner {
        "" => {
            return Some(Spec {
                prefix: "%".into(),
                conversion: "DISPLAY",
            });
        }
        _ => inner.strip_prefix(':')?,
    };
    let mut rest = body;
    let mut flags = String::new();
    while let Some(c) = rest.chars().next() {
        match c {
            '#' | '+' | ' ' | '-' => flags.push(c),
            '<' => flags.push('-'),
            '>' => {}
            '0' => flags.push('0'),
            _ => break,
        }
        rest = &rest[c.len_utf8()..];
    }
    let width_len = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let (width, rest) = rest.split_at(width_len);
    let (precision, rest) = match rest.strip_prefix('.') {
        Some(r) => {
            let n = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
            let (digits, r) = r.split_at(n);
            (Some(digits.parse::<u8>().ok()?), r)
        }
        None => (None, rest),
    };
    let conversion = match (rest, precision) {
        ("" | "?" | "g" | "G", None) => "DISPLAY",
        ("" | "?" | "f", Some(_)) | ("f", None) => "PRECISION",
        ("x", _) => "HEX",
        ("X", _) => "UPPER_HEX",
        ("o", _) => "OCTAL",
        ("e" | "E", _) => "EXP",
        ("g" | "G", Some(_)) => "DISPLAY",
        _ => return None,
    };
    let precision = precision.map(|p| format!(".{p}")).unwrap_or_default();
    Some(Spec {
        prefix: format!("%{flags}{width}{precision}"),
        conversion,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(text: &str) -> (Vec<String>, Vec<(String, &'static str)>) {
        let lit = LitStr::new(text, Span::call_site());
        let (pieces, specs) = split(text, &lit).unwrap();
        (
            pieces,
            specs
                .into_iter()
                .map(|s| (s.prefix, s.conversion))
                .collect(),
        )
    }

    #[test]
    fn placeholders_and_escapes() {
        let (pieces, specs) = parts("i={} x={:.3} 100% {{{:x}}}\n");
        assert_eq!(pieces, ["i=", " x=", " 100%% {", "}\n"]);
        assert_eq!(
            specs,
            [
                ("%".into(), "DISPLAY"),
                ("%.3".into(), "PRECISION"),
                ("%".into(), "HEX")
            ]
        );
    }

    #[test]
    fn c_flags_widths_and_conversions() {
        let (_, specs) = parts("{:+} {:#x} {:o} {:8.3} {:<6} {:-8} {:>5} {:08.2e} {:.4f} {: }");
        let want: [(&str, &str); 10] = [
            ("%+", "DISPLAY"),
            ("%#", "HEX"),
            ("%", "OCTAL"),
            ("%8.3", "PRECISION"),
            ("%-6", "DISPLAY"),
            ("%-8", "DISPLAY"),
            ("%5", "DISPLAY"),
            ("%08.2", "EXP"),
            ("%.4", "PRECISION"),
            ("% ", "DISPLAY"),
        ];
        let want: Vec<(String, &str)> = want.iter().map(|(p, c)| (p.to_string(), *c)).collect();
        assert_eq!(specs, want);
    }

    #[test]
    fn bad_formats_are_errors() {
        for bad in ["{", "}", "{:^5}", "{:5q}", "{0}", "{name}"] {
            let lit = LitStr::new(bad, Span::call_site());
            assert!(split(bad, &lit).is_err(), "{bad}");
        }
    }
}
