//! Rewrites of the linked module, on LLVM's textual IR, between `llvm-link` and `opt`.
//!
//! Stock rustc cannot express a few things the GPU needs; the link step adds them:
//! - kernel descriptors (globals in [`DESCRIPTOR_SECTION`]) are read out and removed;
//! - statics in [`SHARED_SECTION`] move to address space 3 (`.shared`), every use
//!   becoming an `addrspacecast` back to a generic pointer (opt folds it into
//!   `ld.shared`/`st.shared`);
//! - kernel entries get the `ptx_kernel` calling convention (so user crates need no
//!   `abi_ptx` feature) and their launch bounds;
//! - kernel entries' pointer parameters get what Rust's types prove ([`param_facts`]):
//!   `noalias` for every slice (the launcher refuses an output that overlaps another
//!   argument), `readonly` for `&[T]`, `align` = the element's alignment (the launcher
//!   refuses element-misaligned views). With them LLVM loads `&[T]` through the
//!   read-only path (`ld.global.nc`) and keeps loads and stores apart, in every kernel;
//! - per-function `target-cpu`/`target-features` are dropped so one module serves
//!   every architecture, chosen later by `llc -mcpu`.
//!
//! The module at this point has been through `internalize,globaldce`, so it is small.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Result, bail};
use oxide_abi::ParamKind;
use oxide_abi::descriptor::{KernelDescriptor, LaunchBounds};
use oxide_abi::names::{
    DESCRIPTOR_SECTION, DYNAMIC_SHARED_ALIGN, DYNAMIC_SHARED_SYMBOL, SHARED_SECTION,
};

/// Characters that may continue an unquoted LLVM identifier.
fn is_ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'$' | b'.' | b'_')
}

/// The global's name as written after `@` (with quotes if quoted), for a line that
/// defines a global (`@name = ...`).
fn defined_global(line: &str) -> Option<&str> {
    let rest = line.strip_prefix('@')?;
    let len = if let Some(q) = rest.strip_prefix('"') {
        q.find('"')? + 2
    } else {
        rest.bytes().take_while(|&c| is_ident_char(c)).count()
    };
    let (name, after) = rest.split_at(len);
    after.starts_with(" = ").then_some(name)
}

fn in_section(line: &str, section: &str) -> bool {
    line.contains(&format!("section \"{section}\""))
}

/// Decode the first `c"..."` string constant on the line.
fn decode_c_string(line: &str) -> Option<Vec<u8>> {
    let start = line.find("c\"")? + 2;
    let bytes = line.as_bytes();
    let mut out = Vec::new();
    let mut i = start;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => return Some(out),
            b'\\' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok()?;
                if hex == "\\\\" {
                    out.push(b'\\');
                    i += 2;
                    continue;
                }
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    None
}

/// Replace every use of `@name` (not its definition) by `replacement`.
fn replace_uses(text: &str, name: &str, replacement: &str) -> String {
    let needle = format!("@{name}");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find(&needle) {
        let after = &rest[pos + needle.len()..];
        let boundary =
            !name.starts_with('"') && after.as_bytes().first().is_some_and(|&c| is_ident_char(c));
        out.push_str(&rest[..pos]);
        if boundary {
            out.push_str(&needle);
        } else {
            out.push_str(replacement);
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Remove `names` from `@llvm.used` / `@llvm.compiler.used` (dropping an array that
/// becomes empty). Entries look like `ptr @name`.
fn drop_from_used_arrays(lines: &mut Vec<String>, names: &BTreeSet<String>) {
    lines.retain_mut(|line| {
        let Some(global) = defined_global(line) else {
            return true;
        };
        if global != "llvm.used" && global != "llvm.compiler.used" {
            return true;
        }
        let (Some(open), Some(close)) = (line.rfind(" ["), line.rfind("], section")) else {
            return true;
        };
        let entries: Vec<&str> = line[open + 2..close]
            .split(", ")
            .filter(|e| {
                let sym = e.trim().strip_prefix("ptr @").unwrap_or("");
                !names.contains(sym)
            })
            .collect();
        if entries.is_empty() {
            return false;
        }
        let head = &line[..line.find(" = ").unwrap()];
        let tail = &line[close + 1..];
        *line = format!(
            "{head} = appending global [{} x ptr] [{}]{tail}",
            entries.len(),
            entries.join(", ")
        );
        true
    });
}

/// Pull the kernel descriptors out of the module. Returns (descriptor bytes, module).
pub fn take_descriptors(ir: &str) -> Result<(Vec<Vec<u8>>, String)> {
    let mut descriptors = Vec::new();
    let mut removed = BTreeSet::new();
    let mut lines: Vec<String> = Vec::new();
    for line in ir.lines() {
        if let Some(name) = defined_global(line).filter(|_| in_section(line, DESCRIPTOR_SECTION)) {
            let Some(bytes) = decode_c_string(line) else {
                bail!("kernel descriptor @{name} is not a byte string: {line}");
            };
            descriptors.push(bytes);
            removed.insert(name.to_string());
            continue;
        }
        lines.push(line.to_string());
    }
    drop_from_used_arrays(&mut lines, &removed);
    let mut text = lines.join("\n");
    text.push('\n');
    for name in &removed {
        if text.contains(&format!("@{name}")) {
            bail!("kernel descriptor @{name} is still referenced after removal");
        }
    }
    Ok((descriptors, text))
}

/// Move statics in the shared section to address space 3.
pub fn move_shared_statics(ir: &str) -> Result<(String, usize)> {
    let mut shared: Vec<String> = Vec::new();
    let mut lines: Vec<String> = Vec::new();
    // `DynamicSharedArray<T, ALIGN>` with ALIGN above the default names the region
    // `{DYNAMIC_SHARED_SYMBOL}_a{ALIGN}`. Every name becomes the one symbol, declared
    // with the largest alignment asked (one symbol: LLVM takes two globals for two
    // objects, and would reorder accesses to the same bytes through them).
    let aligned: Vec<(&str, usize)> = ir
        .lines()
        .filter_map(defined_global)
        .filter_map(|n| {
            let align = n.strip_prefix(DYNAMIC_SHARED_SYMBOL)?.strip_prefix("_a")?;
            Some((n, align.parse().ok()?))
        })
        .collect();
    let align = aligned
        .iter()
        .map(|&(_, a)| a)
        .fold(DYNAMIC_SHARED_ALIGN, usize::max);
    let ir: String = aligned.iter().fold(ir.to_string(), |text, (name, _)| {
        replace_uses(&text, name, &format!("@{DYNAMIC_SHARED_SYMBOL}"))
    });
    for line in ir.lines() {
        if defined_global(line) == Some(DYNAMIC_SHARED_SYMBOL) {
            // Declared, never defined: its size is the launch's dynamic shared bytes.
            // (Renamed declarations of the aligned names repeat it: keep the first.)
            if !shared.iter().any(|s| s == DYNAMIC_SHARED_SYMBOL) {
                lines.push(format!(
                    "@{DYNAMIC_SHARED_SYMBOL} = external addrspace(3) global [0 x i8], align {align}"
                ));
                shared.push(DYNAMIC_SHARED_SYMBOL.to_string());
            }
            continue;
        }
        let Some(name) = defined_global(line).filter(|_| in_section(line, SHARED_SECTION)) else {
            lines.push(line.to_string());
            continue;
        };
        let def = StaticDef::read(line, "shared", name)?;
        // Shared memory has no initial value on the GPU: whatever the static said, it
        // starts undefined, as its `MaybeUninit` type already told the author.
        lines.push(format!(
            "@{name} = internal addrspace(3) global {} undef, align {}{}",
            def.ty, def.align, def.dbg
        ));
        shared.push(name.to_string());
    }
    let text = cast_uses(&lines, &shared, 3);
    Ok((text, shared.len()))
}

/// A static's definition read apart:
/// `@n = <linkage and flags> global|constant <type> <init>, section "…", align A[, !dbg …]`.
struct StaticDef<'l> {
    ty: &'l str,
    /// What follows the type: the initial value and the attributes.
    after_ty: &'l str,
    align: &'l str,
    /// `, !dbg …` or empty.
    dbg: &'l str,
}

impl<'l> StaticDef<'l> {
    /// `what` names the kind of static in the error ("shared", "constant").
    fn read(line: &'l str, what: &str, name: &str) -> Result<StaticDef<'l>> {
        let Some(kw) = line.find(" global ").or_else(|| line.find(" constant ")) else {
            bail!("cannot read the {what} static's definition: {line}");
        };
        let rest = line[kw..]
            .trim_start_matches(" global ")
            .trim_start_matches(" constant ");
        let Some(ty) = type_prefix(rest) else {
            bail!("cannot read the type of {what} static @{name}: {line}");
        };
        let align = line
            .split(", align ")
            .nth(1)
            .map(|a| a.split(|c: char| !c.is_ascii_digit()).next().unwrap_or("1"))
            .unwrap_or("1");
        let dbg = line.find(", !dbg").map(|i| &line[i..]).unwrap_or("");
        Ok(StaticDef {
            ty,
            after_ty: &rest[ty.len()..],
            align,
            dbg,
        })
    }
}

/// The module's lines with every use (not the definition) of the `moved` statics seen
/// through an `addrspacecast` from `addrspace` to the generic address space.
fn cast_uses(lines: &[String], moved: &[String], addrspace: u32) -> String {
    let mut text = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum::<usize>() + 64);
    for line in lines {
        let is_definition = defined_global(line).is_some_and(|n| moved.iter().any(|s| s == n));
        let mut line = line.clone();
        if !is_definition {
            for name in moved {
                let cast = format!("addrspacecast (ptr addrspace({addrspace}) @{name} to ptr)");
                line = replace_uses(&line, name, &cast);
            }
        }
        text.push_str(&line);
        text.push('\n');
    }
    text
}

/// The leading LLVM type of `s` (`[256 x float]`, `{ i32, [4 x i8] }`, `<{ … }>`, `i32`).
fn type_prefix(s: &str) -> Option<&str> {
    let bytes = s.as_bytes();
    let mut depth = 0i32;
    for (i, &c) in bytes.iter().enumerate() {
        match c {
            b'[' | b'{' | b'<' | b'(' => depth += 1,
            b']' | b'}' | b'>' | b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&s[..=i]);
                }
            }
            b' ' if depth == 0 => return Some(&s[..i]),
            _ => {}
        }
    }
    None
}

/// The kernel entry (a key of `kernels`) that `line` defines, if it is such a definition.
fn defined_kernel<'k, V>(line: &str, kernels: &'k BTreeMap<String, V>) -> Option<&'k String> {
    if !line.starts_with("define ") {
        return None;
    }
    kernels
        .keys()
        .find(|e| line.contains(&format!(" void @{e}(")))
}

/// `ir` with each line that defines a kernel of `kernels` replaced by `rewrite(entry,
/// line)`, the other lines as they are.
fn rewrite_kernel_definitions<V>(
    ir: &str,
    kernels: &BTreeMap<String, V>,
    mut rewrite: impl FnMut(&String, &str) -> Result<String>,
) -> Result<String> {
    let mut out = String::with_capacity(ir.len() + 64 * kernels.len());
    for line in ir.lines() {
        match defined_kernel(line, kernels) {
            Some(entry) => out.push_str(&rewrite(entry, line)?),
            None => out.push_str(line),
        }
        out.push('\n');
    }
    Ok(out)
}

/// What [`mark_kernels`] writes on one kernel entry besides `ptx_kernel`.
#[derive(Clone, Copy, Debug, Default)]
pub struct EntryAttrs {
    /// `"nvvm.maxntid"` / `"nvvm.minctasm"` (PTX `.maxntid`, `.minnctapersm`).
    pub launch_bounds: Option<LaunchBounds>,
    /// `"nvvm.cluster_dim"="x,y,z"`, which LLVM's NVPTX backend prints as
    /// `.explicitcluster` and `.reqnctapercluster x, y, z` for sm_90 and newer (and drops,
    /// silently, for older targets: `cargo oxide build` refuses those first).
    pub cluster: Option<[u32; 3]>,
}

impl EntryAttrs {
    pub fn of(d: &KernelDescriptor) -> EntryAttrs {
        EntryAttrs {
            launch_bounds: d.launch_bounds,
            cluster: d.cluster,
        }
    }

    fn text(&self) -> String {
        let mut attrs = String::new();
        if let Some(bounds) = self.launch_bounds {
            attrs.push_str(&format!(" \"nvvm.maxntid\"=\"{}\"", bounds.max_threads));
            if let Some(min) = bounds.min_blocks {
                attrs.push_str(&format!(" \"nvvm.minctasm\"=\"{min}\""));
            }
        }
        if let Some([x, y, z]) = self.cluster {
            attrs.push_str(&format!(" \"nvvm.cluster_dim\"=\"{x},{y},{z}\""));
        }
        attrs
    }
}

/// Give each kernel entry the `ptx_kernel` calling convention, its launch bounds and
/// its cluster shape.
pub fn mark_kernels(ir: &str, kernels: &BTreeMap<String, EntryAttrs>) -> Result<String> {
    let mut found = BTreeSet::new();
    let out = rewrite_kernel_definitions(ir, kernels, |entry, line| {
        found.insert(entry.clone());
        let mut line = line.replacen(
            &format!(" void @{entry}("),
            &format!(" ptx_kernel void @{entry}("),
            1,
        );
        let attrs = kernels.get(entry).map(EntryAttrs::text).unwrap_or_default();
        if !attrs.is_empty() {
            let Some(at) = fn_attrs_position(&line, entry) else {
                bail!("cannot read the definition of kernel {entry}: {line}");
            };
            line.insert_str(at, &attrs);
        }
        Ok(line)
    })?;
    let missing: Vec<&String> = kernels.keys().filter(|k| !found.contains(*k)).collect();
    if !missing.is_empty() {
        bail!(
            "kernel entries described but not defined in the linked module: {missing:?} \
             (was the crate built by `cargo oxide build`?)"
        );
    }
    Ok(out)
}

/// Where function attributes may go in a `define` line: after the parameter list and
/// any `unnamed_addr`/`addrspace(N)`, before section, metadata and the body.
fn fn_attrs_position(line: &str, entry: &str) -> Option<usize> {
    let open = line.find(&format!("@{entry}("))? + entry.len() + 1;
    let mut depth = 0i32;
    let mut close = None;
    for (i, c) in line[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(open + i + 1);
                    break;
                }
            }
            _ => {}
        }
    }
    let mut at = close?;
    for word in [" unnamed_addr", " local_unnamed_addr"] {
        if line[at..].starts_with(word) {
            at += word.len();
        }
    }
    if line[at..].starts_with(" addrspace(") {
        at += line[at..].find(')')? + 1;
    }
    Some(at)
}

/// The LLVM attributes each parameter of a kernel's entry may carry, in the order of
/// the entry's LLVM parameters (a slice is two: pointer, then length; a shaped array
/// is its pointer, extents and strides; lengths, extents, strides and scalars get
/// nothing). Raw pointers (`unsafe` kernels) get nothing: they may alias.
pub fn param_facts(kernel: &KernelDescriptor) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for p in &kernel.params {
        // A record element (a struct, `[T; N]`) is aligned as its type is.
        let align = match &p.record {
            Some(r) => format!("align {}", r.align.max(1)),
            None => format!("align {}", p.ty.size()),
        };
        match p.kind {
            ParamKind::Scalar | ParamKind::Pointer | ParamKind::Value => out.push(Vec::new()),
            ParamKind::Slice => {
                out.push(vec!["noalias".into(), "readonly".into(), align]);
                out.push(Vec::new());
            }
            ParamKind::DisjointSlice | ParamKind::MutSlice | ParamKind::AtomicSlice => {
                out.push(vec!["noalias".into(), align]);
                out.push(Vec::new());
            }
            // Pointer, then rank extents and rank strides. The launcher refuses an
            // output that overlaps another argument, or itself (strided views).
            ParamKind::Array | ParamKind::DisjointArray => {
                let mut facts = vec!["noalias".into(), align];
                if p.kind == ParamKind::Array {
                    facts.insert(1, "readonly".into());
                }
                out.push(facts);
                let rank = p.array.as_ref().map_or(0, |a| a.rank());
                out.extend((0..2 * rank).map(|_| Vec::new()));
            }
        }
    }
    out
}

/// Add [`param_facts`] to each kernel entry's parameters (after the type, before any
/// attribute rustc wrote; an attribute already there is not repeated).
pub fn annotate_params(ir: &str, kernels: &BTreeMap<String, Vec<Vec<String>>>) -> Result<String> {
    rewrite_kernel_definitions(ir, kernels, |entry, line| {
        let facts = &kernels[entry];
        let open = line.find(&format!("@{entry}(")).unwrap() + entry.len() + 2;
        let Some(close) = matching_paren(line, open - 1) else {
            bail!("cannot read the parameters of kernel {entry}: {line}");
        };
        let params = split_top_level(&line[open..close]);
        if params.len() != facts.len() {
            bail!(
                "kernel {entry} has {} LLVM parameters but its descriptor describes {}: {line}",
                params.len(),
                facts.len()
            );
        }
        let rewritten: Vec<String> = params
            .iter()
            .zip(facts)
            .map(|(param, facts)| {
                let param = param.trim_start();
                let Some(rest) = param.strip_prefix("ptr ").filter(|_| !facts.is_empty()) else {
                    return param.to_string();
                };
                let words: Vec<&str> = rest.split(' ').collect();
                // An attribute rustc already wrote (`align 4`, `noalias`) is kept as is;
                // `readnone` (a slice the kernel never reads, only measures) says more
                // than `readonly`, and LLVM refuses the two together.
                let new: Vec<&str> = facts
                    .iter()
                    .map(String::as_str)
                    .filter(|f| !words.contains(&f.split(' ').next().unwrap_or("")))
                    // An unused slice is `readnone`, which LLVM refuses beside `readonly`.
                    .filter(|f| !(*f == "readonly" && words.contains(&"readnone")))
                    .collect();
                if new.is_empty() {
                    param.to_string()
                } else {
                    format!("ptr {} {rest}", new.join(" "))
                }
            })
            .collect();
        Ok(format!(
            "{}{}{}",
            &line[..open],
            rewritten.join(", "),
            &line[close..]
        ))
    })
}

/// The index of the `)` closing the `(` at `open`.
fn matching_paren(line: &str, open: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in line[open..].char_indices() {
        match c {
            '(' | '{' | '[' | '<' => depth += 1,
            ')' | '}' | ']' | '>' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i);
                }
            }
            _ => {}
        }
    }
    None
}

/// `s` split at the commas outside brackets.
fn split_top_level(s: &str) -> Vec<&str> {
    if s.trim().is_empty() {
        return Vec::new();
    }
    let (mut parts, mut depth, mut start) = (Vec::new(), 0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' | '{' | '[' | '<' => depth += 1,
            ')' | '}' | ']' | '>' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&s[start..]);
    parts
}

/// Drop per-function CPU and feature attributes; `llc -mcpu` decides per architecture.
pub fn strip_cpu_attributes(ir: &str) -> String {
    let mut out = String::with_capacity(ir.len());
    for line in ir.lines() {
        if line.starts_with("attributes #") {
            out.push_str(&strip_string_attr(
                &strip_string_attr(line, "target-cpu"),
                "target-features",
            ));
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}

fn strip_string_attr(line: &str, key: &str) -> String {
    let needle = format!(" \"{key}\"=\"");
    let Some(start) = line.find(&needle) else {
        return line.to_string();
    };
    let value_start = start + needle.len();
    let Some(len) = line[value_start..].find('"') else {
        return line.to_string();
    };
    format!("{}{}", &line[..start], &line[value_start + len + 1..])
}

/// Whether the module calls libdevice (`__nv_*`) functions it does not define.
pub fn needs_libdevice(ir: &str) -> bool {
    ir.lines()
        .any(|l| l.starts_with("declare ") && l.contains(" @__nv_"))
}

mod constant;
pub use constant::move_constant_statics;
mod warps;
pub use warps::whole_warp_users;

#[cfg(test)]
mod tests;
