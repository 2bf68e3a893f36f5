//! `#[tune(NAME = [v, ...], (A, B) = [(a, b), ...], ...)]`: its rules, and the instances a
//! tuned kernel has (one per combination of its tuned const values: the product of its
//! lists, a tuple of names contributing only the tuples it lists; times the instances
//! `#[kernel(...)]` lists for its other generic parameters).

use oxide_abi::ScalarType;
use oxide_abi::descriptor::{LaunchBounds, MAX_BLOCKS_PER_SM, least_blocks_per_sm};
use oxide_abi::names::entry_symbol;
use oxide_abi::tune::{MAX_TUNE_CANDIDATES, TUNABLE_LAUNCH, Tune, TuneConst, TuneLaunch};
use syn::ext::IdentExt;
use syn::{GenericArgument, Ident};

use super::{Elem, Errors, Instance, InstanceArg, Launch, Param, PerThread, Seen, compact};
use crate::parse::{InstanceSyntax, TuneEntry, TuneSyntax};

/// A checked `#[tune]`: its groups of tuned const generics (each one list: a name's
/// values, or a tuple of names and the tuples of values listed for them) and the
/// descriptor's record.
pub struct TunePlan {
    pub groups: Vec<TuneGroup>,
    pub descriptor: Tune,
}

/// Const generics tuned together: their indices among the kernel's type and const
/// parameters, and each candidate (a value for each, as written).
pub struct TuneGroup {
    pub params: Vec<usize>,
    pub candidates: Vec<Vec<(syn::Expr, String)>>,
}

pub(super) fn check_tune(
    t: TuneSyntax,
    generics: &[(&Ident, bool)],
    params: &[Param],
    launch: Option<&Launch>,
    bounds: Option<LaunchBounds>,
    errors: &mut Errors,
) -> Option<TunePlan> {
    let before = errors.0.is_some();
    let failed = |errors: &Errors| errors.0.is_some() && !before;
    if t.entries.is_empty() {
        errors.push(
            t.span,
            "#[tune] lists at least one parameter and its candidates, e.g. \
             #[tune(block = [128, 256, 512])]",
        );
        return None;
    }
    let mut seen = Seen::default();
    let mut groups: Vec<TuneGroup> = Vec::new();
    let mut descriptor = Tune::default();
    let mut count: u64 = 1;
    for entry in t.entries {
        if entry.grouped {
            if let Some(group) = check_group(entry, generics, &mut seen, errors) {
                count = count.saturating_mul(group.candidates.len() as u64);
                groups.push(group);
            }
            continue;
        }
        let name = entry.name().to_string();
        if !seen.first(
            &name,
            entry.name().span(),
            "is tuned twice; keep one list",
            errors,
        ) {
            continue;
        }
        if name == "key" {
            descriptor.key = key_params(entry, params, errors);
            continue;
        }
        if entry.values.is_empty() {
            errors.push(entry.span, format!("`{name}` lists no candidates"));
            continue;
        }
        count = count.saturating_mul(entry.values.len() as u64);
        let ident = entry.name().clone();
        match generics.iter().position(|(g, _)| **g == ident) {
            Some(i) if generics[i].1 => {
                let values = const_values(&name, entry.values, errors);
                groups.push(TuneGroup {
                    params: vec![i],
                    candidates: values.into_iter().map(|v| vec![v]).collect(),
                });
            }
            Some(_) => type_parameter(&ident, errors),
            None => match TUNABLE_LAUNCH.iter().find(|l| l.name == name) {
                Some(tunable) => {
                    let values =
                        launch_values(&ident, entry.values, tunable, launch, bounds, errors);
                    descriptor.launch.push(TuneLaunch {
                        param: name,
                        values,
                    });
                }
                None => not_tunable(&ident, generics, true, errors),
            },
        }
    }
    if count > u64::from(MAX_TUNE_CANDIDATES) {
        errors.push(
            t.span,
            format!(
                "#[tune] makes {count} candidates (the product of its lists), more than \
                 {MAX_TUNE_CANDIDATES}: each is built, verified and timed; list fewer values"
            ),
        );
    }
    // Declaration order, so that entry names follow the generic parameters.
    groups.sort_by_key(|g| g.params.iter().min().copied());
    let mut tuned: Vec<(usize, TuneConst)> = Vec::new();
    for group in &groups {
        for (k, &i) in group.params.iter().enumerate() {
            let mut values: Vec<String> = Vec::new();
            for candidate in &group.candidates {
                if !values.contains(&candidate[k].1) {
                    values.push(candidate[k].1.clone());
                }
            }
            let param = generics[i].0.to_string();
            tuned.push((i, TuneConst { param, values }));
        }
    }
    tuned.sort_by_key(|(i, _)| *i);
    descriptor.consts = tuned.into_iter().map(|(_, c)| c).collect();
    (!failed(errors)).then_some(TunePlan { groups, descriptor })
}

/// The error for a type parameter named in #[tune].
fn type_parameter(ident: &Ident, errors: &mut Errors) {
    errors.push(
        ident.span(),
        format!(
            "`{ident}` is a type parameter: #[tune] takes const generic parameters \
             (`const {ident}: usize`) and launch parameters; list types in #[kernel(...)]"
        ),
    );
}

/// The error for a name #[tune] cannot take: neither a const generic parameter nor
/// (where `launch_ok`: outside a tuple) a launch parameter.
fn not_tunable(ident: &Ident, generics: &[(&Ident, bool)], launch_ok: bool, errors: &mut Errors) {
    let consts: Vec<String> = generics
        .iter()
        .filter(|(_, is_const)| *is_const)
        .map(|(g, _)| format!("`{g}`"))
        .collect();
    let consts = if consts.is_empty() {
        "it has none".to_string()
    } else {
        consts.join(", ")
    };
    let message = if launch_ok {
        let launch: Vec<String> = TUNABLE_LAUNCH
            .iter()
            .map(|l| format!("`{}`", l.name))
            .collect();
        format!(
            "`{ident}` is neither a const generic parameter of this kernel ({consts}) nor a \
             launch parameter ({})",
            launch.join(", ")
        )
    } else if TUNABLE_LAUNCH.iter().any(|l| ident == l.name) {
        format!(
            "`{ident}` is a launch parameter: a tuple in #[tune] binds const generic \
             parameters ({consts}); list `{ident} = [...]` on its own, and every \
             combination is tried with each of its values"
        )
    } else {
        format!("`{ident}` is not a const generic parameter of this kernel ({consts})")
    };
    errors.push(ident.span(), message);
}

/// `(A, B) = [(a, b), ...]`: const generic names, each once, and tuples of as many
/// literals, each tuple once.
fn check_group(
    entry: TuneEntry,
    generics: &[(&Ident, bool)],
    seen: &mut Seen,
    errors: &mut Errors,
) -> Option<TuneGroup> {
    let before = errors.0.is_some();
    let names: Vec<String> = entry.names.iter().map(|n| n.to_string()).collect();
    let shown = format!("({})", names.join(", "));
    if names.len() < 2 {
        errors.push(
            entry.span,
            format!(
                "a tuple of one name tunes it alone: write `{} = [...]`",
                names[0]
            ),
        );
        return None;
    }
    let mut params = Vec::new();
    for ident in &entry.names {
        let name = ident.to_string();
        if !seen.first(&name, ident.span(), "is tuned twice; keep one list", errors) {
            continue;
        }
        match generics.iter().position(|(g, _)| *g == ident) {
            Some(i) if generics[i].1 => params.push(i),
            Some(_) => type_parameter(ident, errors),
            None => not_tunable(ident, generics, false, errors),
        }
    }
    if entry.values.is_empty() {
        errors.push(entry.span, format!("`{shown}` lists no candidates"));
    }
    let mut candidates: Vec<Vec<(syn::Expr, String)>> = Vec::new();
    for v in entry.values {
        let elems: Vec<syn::Expr> = match &v {
            syn::Expr::Tuple(t) if t.elems.len() == names.len() => {
                t.elems.iter().cloned().collect()
            }
            _ => {
                errors.push_spanned(
                    &v,
                    format!(
                        "each candidate of `{shown}` is a tuple of {} values, one for each \
                         name in order, e.g. ({}); got `{}`",
                        names.len(),
                        vec!["1"; names.len()].join(", "),
                        compact(&v)
                    ),
                );
                continue;
            }
        };
        let values: Vec<_> = names
            .iter()
            .zip(elems)
            .filter_map(|(name, e)| const_literal(name, e, errors))
            .collect();
        if values.len() != names.len() {
            continue;
        }
        let texts: Vec<&str> = values.iter().map(|(_, t)| t.as_str()).collect();
        if candidates
            .iter()
            .any(|c| c.iter().map(|(_, t)| t.as_str()).eq(texts.iter().copied()))
        {
            errors.push_spanned(&v, format!("`{shown}` lists ({}) twice", texts.join(", ")));
            continue;
        }
        candidates.push(values);
    }
    (errors.0.is_some() == before).then_some(TuneGroup { params, candidates })
}

/// `key = [a, b]`: the scalar parameters whose values place a call in a bucket (integers
/// or bools: a float has no power-of-two bucket), each once.
fn key_params(
    entry: crate::parse::TuneEntry,
    params: &[Param],
    errors: &mut Errors,
) -> Vec<String> {
    let scalars: Vec<String> = params
        .iter()
        .filter(|p| is_key_scalar(p))
        .map(|p| format!("`{}`", p.ident.unraw()))
        .collect();
    let fix = if scalars.is_empty() {
        "this kernel has no integer or bool parameter; leave `key` out (its array extents \
         are the key)"
            .to_string()
    } else {
        format!("name some of {}", scalars.join(", "))
    };
    if entry.values.is_empty() {
        errors.push(
            entry.span,
            format!("#[tune] `key` names no parameter: {fix}"),
        );
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::new();
    for v in entry.values {
        let found = match &v {
            syn::Expr::Path(p) => p.path.get_ident().cloned(),
            _ => None,
        };
        let Some(ident) = found else {
            errors.push_spanned(
                &v,
                format!(
                    "#[tune] `key` lists parameter names, got `{}`: {fix}",
                    compact(&v)
                ),
            );
            continue;
        };
        let name = ident.unraw().to_string();
        match params.iter().find(|p| p.ident.unraw() == name) {
            Some(p) if is_key_scalar(p) => {
                if out.contains(&name) {
                    errors.push_spanned(&v, format!("#[tune] `key` lists `{name}` twice"));
                } else {
                    out.push(name);
                }
            }
            Some(_) => errors.push_spanned(
                &v,
                format!(
                    "#[tune] `key` takes integer or bool parameters, got `{name}`, which is \
                     not one: {fix}"
                ),
            ),
            None => errors.push_spanned(
                &v,
                format!("#[tune] `key` names `{name}`, which is not a parameter: {fix}"),
            ),
        }
    }
    out
}

/// An integer or bool scalar parameter (a float has no power-of-two bucket).
fn is_key_scalar(p: &Param) -> bool {
    matches!(p.kind, oxide_abi::ParamKind::Scalar)
        && matches!(&p.elem, Elem::Scalar(t) if t.is_integer() || *t == ScalarType::Bool)
}

/// A const's candidates: integer literals, possibly negated, each once.
fn const_values(
    name: &str,
    values: Vec<syn::Expr>,
    errors: &mut Errors,
) -> Vec<(syn::Expr, String)> {
    let mut out: Vec<(syn::Expr, String)> = Vec::new();
    for v in values {
        let Some((v, text)) = const_literal(name, v, errors) else {
            continue;
        };
        if out.iter().any(|(_, t)| *t == text) {
            errors.push_spanned(&v, format!("`{name}` lists {text} twice"));
            continue;
        }
        out.push((v, text));
    }
    out
}

/// A candidate of the const `name`, with its text: an integer literal, possibly
/// negated, or a bool.
fn const_literal(name: &str, v: syn::Expr, errors: &mut Errors) -> Option<(syn::Expr, String)> {
    let literal = match &v {
        syn::Expr::Lit(l) => matches!(l.lit, syn::Lit::Int(_) | syn::Lit::Bool(_)),
        syn::Expr::Unary(u) => {
            matches!(u.op, syn::UnOp::Neg(_))
                && matches!(&*u.expr, syn::Expr::Lit(l) if matches!(l.lit, syn::Lit::Int(_)))
        }
        _ => false,
    };
    if !literal {
        errors.push_spanned(
            &v,
            format!("the candidates of `{name}` are integer (or bool) literals"),
        );
        return None;
    }
    let text = compact(&v);
    Some((v, text))
}

/// A launch parameter's candidates: integers the policy takes, with its own value among
/// them.
fn launch_values(
    name: &Ident,
    values: Vec<syn::Expr>,
    tunable: &oxide_abi::tune::TunableLaunch,
    launch: Option<&Launch>,
    bounds: Option<LaunchBounds>,
    errors: &mut Errors,
) -> Vec<u32> {
    let Some(launch) = launch else {
        errors.push(
            name.span(),
            format!(
                "tuning `{name}` needs a #[launch(...)] policy, whose `{name}` is the hand \
                 pick: e.g. #[launch(elementwise(out, block = 256))]"
            ),
        );
        return Vec::new();
    };
    let kind = launch.kind.name();
    if !tunable.policies.contains(&kind) {
        let has: Vec<&str> = TUNABLE_LAUNCH
            .iter()
            .filter(|l| l.policies.contains(&kind))
            .map(|l| l.name)
            .collect();
        errors.push(
            name.span(),
            format!(
                "`{name}` is not a tunable parameter of `{kind}`; it has: {}",
                if has.is_empty() {
                    "none".to_string()
                } else {
                    has.join(", ")
                }
            ),
        );
        return Vec::new();
    }
    let hi = match tunable.name {
        "block" => bounds.map_or(1024, |b| b.max_threads.min(1024)),
        "blocks_per_sm" => MAX_BLOCKS_PER_SM,
        _ => 1 << 16,
    };
    let lo = match tunable.name {
        "blocks_per_sm" => least_blocks_per_sm(kind),
        _ => 1,
    };
    let mut out: Vec<u32> = Vec::new();
    for v in values {
        let parsed = match &v {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(i),
                ..
            }) => i.base10_parse::<u32>().ok(),
            _ => None,
        };
        match parsed {
            Some(n) if (lo..=hi).contains(&n) && !out.contains(&n) => out.push(n),
            Some(n) if out.contains(&n) => {
                errors.push_spanned(&v, format!("`{name}` lists {n} twice"));
            }
            _ => errors.push_spanned(
                &v,
                format!(
                    "the candidates of `{name}` are integers from {lo} to {hi}{}",
                    if tunable.name == "block" {
                        " (the kernel's launch bounds)"
                    } else {
                        ""
                    }
                ),
            ),
        }
    }
    let hand = match tunable.name {
        "block" => Some(launch.block),
        "blocks_per_sm" => Some(launch.blocks_per_sm),
        _ => match launch.per_thread {
            PerThread::Elements(n) => Some(n),
            PerThread::Vector => None,
        },
    };
    match hand {
        None => errors.push(
            name.span(),
            "`per_thread = vector` depends on the element type: give #[launch] a number of \
             elements per thread to tune it",
        ),
        Some(h) if !out.is_empty() && !out.contains(&h) => errors.push(
            name.span(),
            format!(
                "`{name}` lists the candidates, and the #[launch] policy's {name} = {h} is the \
                 hand pick (what runs where nothing was tuned): add {h} to the list"
            ),
        ),
        _ => {}
    }
    out
}

/// The instances of a kernel with tuned consts: each instance `#[kernel(...)]` lists for
/// the untuned generic parameters, with each combination of tuned values (the hand pick
/// first), all of a kernel's arguments in declaration order.
pub(super) fn tuned_instances(
    name: &str,
    sig: &syn::Signature,
    generics: &[(&Ident, bool)],
    plan: &TunePlan,
    listed: Vec<InstanceSyntax>,
    params: &[Param],
    errors: &mut Errors,
) -> Vec<Instance> {
    let tuned: Vec<usize> = plan.groups.iter().flat_map(|g| g.params.clone()).collect();
    let free: Vec<(usize, (&Ident, bool))> = generics
        .iter()
        .enumerate()
        .filter(|(i, _)| !tuned.contains(i))
        .map(|(i, g)| (i, *g))
        .collect();
    let mut partials: Vec<Vec<(usize, InstanceArg)>> = Vec::new();
    if free.is_empty() {
        if let Some(first) = listed.first() {
            errors.push(
                first.span,
                format!(
                    "every generic parameter of `{name}` is tuned, so #[kernel] lists no \
                     instances: remove them"
                ),
            );
        }
        partials.push(Vec::new());
    } else {
        let names: Vec<String> = free.iter().map(|(_, (g, _))| g.to_string()).collect();
        if listed.is_empty() {
            errors.push_spanned(
                &sig.generics,
                format!(
                    "kernel `{name}` has generic parameters besides the tuned ones ({}): list \
                     their instances, e.g. #[kernel(f32, f64)]",
                    names.join(", ")
                ),
            );
        }
        for inst in listed {
            let n = free.len();
            if !inst.binds(n) {
                errors.push(
                    inst.span,
                    format!(
                        "kernel `{name}`'s untuned generic parameters are {}: each instance \
                         binds {} (the tuned ones come from #[tune])",
                        names.join(", "),
                        super::arity(n, "one"),
                    ),
                );
                continue;
            }
            let args: Vec<(usize, InstanceArg)> = free
                .iter()
                .zip(inst.args)
                .filter_map(|((i, (param, is_const)), value)| {
                    super::instance_arg(param, *is_const, value, errors).map(|a| (*i, a))
                })
                .collect();
            if args.len() == n {
                partials.push(args);
            }
        }
    }
    let mut out: Vec<Instance> = Vec::new();
    for partial in &partials {
        for combo in combinations(plan) {
            let mut args: Vec<(usize, InstanceArg)> =
                partial.iter().map(|(i, a)| (*i, clone_arg(a))).collect();
            for (i, (expr, text)) in combo {
                args.push((
                    i,
                    InstanceArg {
                        param: generics[i].0.clone(),
                        is_const: true,
                        value: GenericArgument::Const(expr.clone()),
                        text: text.clone(),
                        scalar: None,
                    },
                ));
            }
            args.sort_by_key(|(i, _)| *i);
            let args: Vec<InstanceArg> = args.into_iter().map(|(_, a)| a).collect();
            super::check_instance_types(&args, params, errors);
            let texts: Vec<&str> = args.iter().map(|a| a.text.as_str()).collect();
            let entry = entry_symbol(name, &texts);
            if out.iter().any(|c| c.entry == entry) {
                continue; // an instance listed twice: check_instances' error case
            }
            out.push(Instance { args, entry });
        }
    }
    out
}

fn clone_arg(a: &InstanceArg) -> InstanceArg {
    InstanceArg {
        param: a.param.clone(),
        is_const: a.is_const,
        value: a.value.clone(),
        text: a.text.clone(),
        scalar: a.scalar,
    }
}

/// Every combination of the tuned values: one candidate of each group, the first of
/// each first (the hand pick), the last group's varying fastest.
fn combinations(plan: &TunePlan) -> Vec<Vec<(usize, &(syn::Expr, String))>> {
    let mut out: Vec<Vec<(usize, &(syn::Expr, String))>> = vec![Vec::new()];
    for group in &plan.groups {
        out = out
            .into_iter()
            .flat_map(|combo| {
                group.candidates.iter().map(move |candidate| {
                    let mut c = combo.clone();
                    c.extend(group.params.iter().copied().zip(candidate));
                    c
                })
            })
            .collect();
    }
    out
}
