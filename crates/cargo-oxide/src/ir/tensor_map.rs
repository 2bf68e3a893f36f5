//! Tensor maps taken by value (`map: TmaDescriptor`, kind `tensor_map`): the TMA copies
//! must read the map where the launch put it, in parameter space.
//!
//! The entry takes the map as `&TmaDescriptor`, which the link step makes a `byval`,
//! `"nvvm.grid_constant"` parameter (`param_facts`), and passes `*map` on to the
//! kernel's body. rustc copies that value into a 64-aligned stack slot (`alloca` +
//! `llvm.memcpy` from the parameter), and because the TMA instructions take the slot's
//! address in inline assembly, which may read or write anything, no LLVM pass removes
//! the copy: the copy would then be in local memory, where `cp.async.bulk.tensor` cannot
//! read a tensor map. The binding is immutable and the map opaque, so the slot holds the
//! parameter's bytes for the whole kernel: [`forward_tensor_map_copies`] makes its uses
//! use the parameter instead, which NVPTX addresses with `cvta.param`.

use std::collections::BTreeMap;

use anyhow::{Result, bail};
use oxide_abi::TENSOR_MAP_SIZE;

use super::{defined_kernel, matching_paren, split_top_level};

const MEMCPY: &str = "call void @llvm.memcpy.p0.p0.i64(";

/// In each kernel entry of `kernels` (entry name to the LLVM indices of its tensor-map
/// parameters), replace a stack copy of such a parameter by the parameter itself, when
/// the copy is only read: loaded, or handed to inline assembly (the TMA instructions).
/// A copy used any other way (stored to, passed to a function) stays as it is.
pub fn forward_tensor_map_copies(
    ir: &str,
    kernels: &BTreeMap<String, Vec<usize>>,
) -> Result<String> {
    let lines: Vec<&str> = ir.lines().collect();
    let mut out = String::with_capacity(ir.len());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        let Some(entry) = defined_kernel(line, kernels).filter(|e| !kernels[*e].is_empty()) else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let open = line.find(&format!("@{entry}(")).unwrap() + entry.len() + 1;
        let Some(close) = matching_paren(line, open) else {
            bail!("cannot read the parameters of kernel {entry}: {line}");
        };
        let params = split_top_level(&line[open + 1..close]);
        let names: Vec<&str> = kernels[entry]
            .iter()
            .filter_map(|&k| params.get(k))
            .filter_map(|p| p.split_whitespace().last())
            .collect();
        let end = lines[i..]
            .iter()
            .position(|l| *l == "}")
            .map_or(lines.len(), |n| i + n);
        let mut body: Vec<String> = lines[i..end].iter().map(|l| l.to_string()).collect();
        for name in names {
            while forward_one(&mut body, name) {}
        }
        out.push_str(line);
        out.push('\n');
        for l in body {
            out.push_str(&l);
            out.push('\n');
        }
        i = end;
    }
    Ok(out)
}

/// Forward one read-only stack copy of the parameter `param` in `body`; whether one was.
fn forward_one(body: &mut Vec<String>, param: &str) -> bool {
    for (at, line) in body.iter().enumerate() {
        let Some(slot) = copy_of(line, param) else {
            continue;
        };
        let alloca = format!("  {slot} = alloca [{TENSOR_MAP_SIZE} x i8]");
        let Some(def) = body.iter().position(|l| l.starts_with(&alloca)) else {
            continue;
        };
        let read_only = body
            .iter()
            .enumerate()
            .filter(|&(k, l)| k != at && k != def && uses(l, &slot))
            .all(|(_, l)| is_read(l, &slot));
        if !read_only {
            continue;
        }
        let (at, def) = (at.max(def), at.min(def));
        body.remove(at);
        body.remove(def);
        for l in body.iter_mut() {
            if uses(l, &slot) {
                *l = replace_local(l, &slot, param);
            }
        }
        return true;
    }
    false
}

/// The destination of `line` when it copies the map's bytes out of `param`.
fn copy_of(line: &str, param: &str) -> Option<String> {
    let start = line.find(MEMCPY)? + MEMCPY.len();
    let close = matching_paren(line, start - 1)?;
    let args = split_top_level(&line[start..close]);
    let [dst, src, len, _volatile] = args.as_slice() else {
        return None;
    };
    let last = |a: &str| a.split_whitespace().last().map(str::to_string);
    (last(src)?.as_str() == param && len.trim() == format!("i64 {TENSOR_MAP_SIZE}"))
        .then(|| last(dst))
        .flatten()
        .filter(|d| d.starts_with('%'))
}

/// Whether `line` reads `slot` only: a load from it, or an inline-assembly operand.
fn is_read(line: &str, slot: &str) -> bool {
    let t = line.trim_start();
    let rhs = t.split_once(" = ").map_or(t, |(_, r)| r);
    (rhs.starts_with("load ") && rhs.contains(&format!("ptr {slot}")))
        || (rhs.contains(" asm ") && rhs.contains("call "))
}

/// Whether `line` names the local value `slot` (`%6`, not `%60`).
fn uses(line: &str, slot: &str) -> bool {
    replace_local(line, slot, "\u{0}") != line
}

/// `line` with each use of the local value `slot` written as `with`.
fn replace_local(line: &str, slot: &str, with: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(pos) = rest.find(slot) {
        let after = &rest[pos + slot.len()..];
        let whole = !after
            .bytes()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'$'));
        out.push_str(&rest[..pos]);
        out.push_str(if whole { with } else { slot });
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const ENTRY: &str = "define ptx_kernel void @k(ptr byval([128 x i8]) \"nvvm.grid_constant\" \
        noalias noundef readonly align 64 dereferenceable(128) %0, i32 noundef %1) unnamed_addr #0 {";

    fn run(body: &str) -> String {
        let ir = format!("{ENTRY}\n{body}}}\n");
        let kernels = BTreeMap::from([("k".to_string(), vec![0])]);
        forward_tensor_map_copies(&ir, &kernels).unwrap()
    }

    #[test]
    fn a_copy_read_by_the_tma_asm_becomes_the_parameter() {
        let out = run("  %6 = alloca [128 x i8], align 64\n  \
            call void @llvm.memcpy.p0.p0.i64(ptr noundef nonnull align 64 %6, ptr noundef nonnull align 64 %0, i64 128, i1 false)\n  \
            %60 = add i32 %1, 1\n  \
            call void asm sideeffect \"cp.async.bulk.tensor [${0}]\", \"l\"(ptr nonnull align 64 %6) #1\n  \
            ret void\n");
        assert!(!out.contains("alloca"), "{out}");
        assert!(!out.contains("llvm.memcpy"), "{out}");
        assert!(out.contains("(ptr nonnull align 64 %0) #1"), "{out}");
        assert!(out.contains("%60 = add i32 %1, 1"), "{out}");
    }

    #[test]
    fn a_copy_that_is_written_stays() {
        let body = "  %6 = alloca [128 x i8], align 64\n  \
            call void @llvm.memcpy.p0.p0.i64(ptr align 64 %6, ptr align 64 %0, i64 128, i1 false)\n  \
            store i8 0, ptr %6, align 64\n  \
            ret void\n";
        let out = run(body);
        assert!(
            out.contains("alloca [128 x i8]") && out.contains("llvm.memcpy"),
            "{out}"
        );
    }

    #[test]
    fn other_kernels_and_other_copies_are_untouched() {
        let body = "  %6 = alloca [128 x i8], align 64\n  \
            call void @llvm.memcpy.p0.p0.i64(ptr align 64 %6, ptr align 64 %2, i64 128, i1 false)\n  \
            ret void\n";
        assert!(run(body).contains("llvm.memcpy"));
        let ir = format!("{ENTRY}\n{body}}}\n");
        let none = BTreeMap::from([("k".to_string(), vec![])]);
        assert_eq!(forward_tensor_map_copies(&ir, &none).unwrap(), ir);
    }
}
