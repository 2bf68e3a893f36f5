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

//!
//! `gpu_printf_c!` (and `gpu_printf!` given a C format) keep the C string, and check
//! it: each conversion's argument must have a type of the matching C class (a trait
//! bound per argument, spanned at it), and what `vprintf` would read wrongly or the
//! emulator could not pass (`*` widths, `%n`, `%p`, wide and `long double` forms) is
//! refused by name. `gpu_assert!`'s message takes the same two forms
//! ([`gpu_assert_failed`]).

use oxide_abi::names::RESERVED_PREFIX;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Ident, Lit, LitStr, Token};

/// Where the formatted text goes.
enum Sink {
    /// `printf`: printed (returns the argument count).
    Print,
    /// A failed `gpu_assert!`: the message of its error (on a GPU: printed, then
    /// `__assertfail`). The condition's text, the file and the line, as expressions.
    Assert([TokenStream; 3]),
}

impl Sink {
    fn call(&self, format: TokenStream, args: TokenStream) -> TokenStream {
        let print = quote!(::oxide_device::print);
        match self {
            Sink::Print => quote!(#print::printf(#format, #args)),
            Sink::Assert([cond, file, line]) => quote!(#print::assert_failed_message(
                ::core::concat!(#cond, "\0"),
                ::core::concat!(#file, "\0"),
                #line,
                #format,
                #args,
            )),
        }
    }
}

pub fn gpu_printf(input: TokenStream) -> syn::Result<TokenStream> {
    let (format, args) = format_and_args(input, "gpu_printf!")?;
    expand(&format, args, &Sink::Print)
}

pub fn gpu_printf_c(input: TokenStream) -> syn::Result<TokenStream> {
    let (format, args) = format_and_args(input, "gpu_printf_c!")?;
    expand_c(&format, args, &Sink::Print)
}

/// `stringify!(cond), file!(), line!(), format, args…` (from `gpu_assert!`).
pub fn gpu_assert_failed(input: TokenStream) -> syn::Result<TokenStream> {
    let mut exprs = Punctuated::<Expr, Token![,]>::parse_terminated
        .parse2(input)?
        .into_iter();
    let (Some(cond), Some(file), Some(line)) = (exprs.next(), exprs.next(), exprs.next()) else {
        return Err(syn::Error::new(
            Span::call_site(),
            "expected the condition, file and line (this macro is gpu_assert!'s)",
        ));
    };
    let (format, args) = first_literal(exprs, "gpu_assert!'s message")?;
    let place = [cond, file, line].map(|e| quote!(#e));
    expand(&format, args, &Sink::Assert(place))
}

fn format_and_args(input: TokenStream, name: &str) -> syn::Result<(LitStr, Vec<Expr>)> {
    let exprs = Punctuated::<Expr, Token![,]>::parse_terminated.parse2(input)?;
    first_literal(exprs.into_iter(), name)
}

fn first_literal(
    mut exprs: impl Iterator<Item = Expr>,
    name: &str,
) -> syn::Result<(LitStr, Vec<Expr>)> {
    let format = match exprs.next() {
        Some(Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        })) => s,
        Some(other) => {
            return Err(syn::Error::new_spanned(
                other,
                format!("{name} needs a string literal first"),
            ));
        }
        None => {
            return Err(syn::Error::new(
                Span::call_site(),
                format!("{name} needs a format string"),
            ));
        }
    };
    Ok((format, exprs.collect()))
}

/// A `gpu_printf!` format: Rust placeholders, or a C format (no `{}`, a `%`, and
/// arguments), which is passed through as it is.
fn expand(format: &LitStr, args: Vec<Expr>, sink: &Sink) -> syn::Result<TokenStream> {
    let text = format.value();
    if !text.contains(['{', '}']) && text.contains('%') && !args.is_empty() {
        return expand_c(format, args, sink);
    }
    let (pieces, specs) = split(&text, format)?;
    if specs.len() != args.len() {
        return Err(syn::Error::new_spanned(
            format,
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
    let call = sink.call(quote!(__oxide_printf_fmt), quote!(&__oxide_printf_args));
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
        #call
    }})
}

/// A C format string, checked conversion by conversion against the arguments' types.
fn expand_c(format: &LitStr, args: Vec<Expr>, sink: &Sink) -> syn::Result<TokenStream> {
    let classes = c_conversions(&format.value()).map_err(|e| syn::Error::new_spanned(format, e))?;
    if classes.len() != args.len() {
        return Err(syn::Error::new_spanned(
            format,
            format!(
                "{} but {}: each conversion reads one argument",
                count(classes.len(), "conversion"),
                count(args.len(), "argument"),
            ),
        ));
    }
    let print = quote!(::oxide_device::print);
    // Each value's name carries its argument's span, so that a type error points at it.
    let values: Vec<Ident> = args
        .iter()
        .enumerate()
        .map(|(i, a)| Ident::new(&format!("{RESERVED_PREFIX}_printf_arg{i}"), a.span()))
        .collect();
    let checks = classes
        .iter()
        .zip(&args)
        .zip(&values)
        .map(|((class, arg), v)| {
            let check = Ident::new(class.check(), Span::call_site());
            quote_spanned!(arg.span()=> #print::#check(&#v);)
        });
    let indices = 0..args.len();
    let n = args.len();
    let call = sink.call(
        quote!(::core::concat!(#format, "\0").as_bytes()),
        quote!(&__oxide_printf_args),
    );
    Ok(quote! {{
        let (#(#values,)*) = (#(#args,)*);
        #(#checks)*
        #[allow(unused_mut)]
        let mut __oxide_printf_args = #print::PrintfArgs::<#n>::default();
        #( __oxide_printf_args.push(#values, #indices); )*
        #call
    }})
}

/// `1 argument`, `2 arguments`.
fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// What a C conversion reads from the argument buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CClass {
    Int,
    LongLong,
    Double,
    String,
}

impl CClass {
    /// oxide-device's `print` function whose bound checks an argument of this class.
    fn check(self) -> &'static str {
        match self {
            CClass::Int => "takes_int",
            CClass::LongLong => "takes_long_long",
            CClass::Double => "takes_double",
            CClass::String => "takes_string",
        }
    }
}

const C_SUPPORTED: &str = "gpu_printf_c! supports %d %i %u %x %X %o %c, %f %F %e %E %g %G %a %A, \
     %s and %%, with flags (-+ #0), a width, a precision and the lengths h, hh, l, ll, z, j, t";

/// The class of each conversion of C format `text`, or why it is refused.
fn c_conversions(text: &str) -> Result<Vec<CClass>, String> {
    let mut classes = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find('%') {
        let spec = &rest[at..];
        let mut chars = spec.char_indices().skip(1).peekable();
        let mut end = None;
        let mut length = String::new();
        let mut star = false;
        while let Some(&(i, c)) = chars.peek() {
            chars.next();
            match c {
                '%' if i == 1 => {
                    end = Some((i, None));
                    break;
                }
                '-' | '+' | ' ' | '#' | '.' | '0'..='9' if length.is_empty() => {}
                '*' if length.is_empty() => star = true,
                'h' | 'l' | 'z' | 'j' | 't' | 'L' | 'q' => length.push(c),
                _ => {
                    end = Some((i, Some(c)));
                    break;
                }
            }
        }
        let Some((i, conversion)) = end else {
            return Err(format!(
                "`{spec}`: a `%` with no conversion after it; write `%%` for a percent sign"
            ));
        };
        let whole = &spec[..i + spec[i..].chars().next().map_or(0, char::len_utf8)];
        rest = &spec[whole.len()..];
        let Some(conversion) = conversion else {
            continue; // %%
        };
        if star {
            return Err(format!(
                "`{whole}`: a `*` width or precision takes it from an argument, which \
                 gpu_printf_c! does not pass; write the number into the format (`%6d`, \
                 `%.3f`), or use gpu_printf!'s `{{:6}}`"
            ));
        }
        let class = match (conversion, length.as_str()) {
            ('d' | 'i' | 'u' | 'x' | 'X' | 'o', "" | "h" | "hh") | ('c', "") => CClass::Int,
            ('d' | 'i' | 'u' | 'x' | 'X' | 'o', "l" | "ll" | "z" | "j" | "t" | "q") => {
                CClass::LongLong
            }
            ('f' | 'F' | 'e' | 'E' | 'g' | 'G' | 'a' | 'A', "" | "l") => CClass::Double,
            ('s', "") => CClass::String,
            ('f' | 'F' | 'e' | 'E' | 'g' | 'G' | 'a' | 'A', "L") => {
                return Err(format!(
                    "`{whole}`: `long double` has no device form; write `{}`",
                    whole.replace('L', "")
                ));
            }
            _ => return Err(format!("`{whole}` is not supported: {C_SUPPORTED}")),
        };
        classes.push(class);
    }
    Ok(classes)
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
    fn c_conversions_have_classes() {
        use CClass::*;
        let got = c_conversions("%d %5u %-08x %hhd %lld %lu %zu %.3f %le %G %s %c 100%%").unwrap();
        assert_eq!(
            got,
            [
                Int, Int, Int, Int, LongLong, LongLong, LongLong, Double, Double, Double, String,
                Int
            ]
        );
        assert_eq!(c_conversions("no conversions, 50%% off").unwrap(), []);
    }

    #[test]
    fn c_conversions_refuse_by_name() {
        for (bad, says) in [
            ("%*d", "`%*d`: a `*` width"),
            ("x=%.*f", "`%.*f`: a `*` width or precision"),
            ("%n", "`%n` is not supported"),
            ("%p", "`%p` is not supported"),
            ("%ls", "`%ls` is not supported"),
            ("%Lf", "`%Lf`: `long double`"),
            ("100%", "a `%` with no conversion"),
            ("%-", "a `%` with no conversion"),
        ] {
            let e = c_conversions(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn bad_formats_are_errors() {
        for bad in ["{", "}", "{:^5}", "{:5q}", "{0}", "{name}"] {
            let lit = LitStr::new(bad, Span::call_site());
            assert!(split(bad, &lit).is_err(), "{bad}");
        }
    }
}
