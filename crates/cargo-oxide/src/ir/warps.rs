//! Which kernels need whole warps: those whose code (through its calls) runs a warp
//! collective over the full warp. A block of 100 threads has a last warp of 4 lanes;
//! a `shfl.sync` whose mask names all 32 lanes there reads lanes that do not exist,
//! which PTX leaves undefined (an H200 happened to return right sums). The launcher
//! refuses such a kernel any block that is not a whole number of warps, by the name of
//! the instruction found here (oxide-abi's `KernelDescriptor::whole_warps`).
//!
//! Read from the optimised module, where the masks of `warp::reduce` and its kin are
//! constants: the intrinsics `llvm.nvvm.{shfl,vote,match}.*.sync`, `bar.warp.sync` and
//! `redux.sync.*` with the mask `-1`, and the warp-wide matrix instructions (`mma`,
//! `ldmatrix`, `stmatrix`, `wgmma`, `setmaxnreg`) in inline PTX, which have no mask.
//! A collective whose mask is computed (`warp::reduce_partial`, a tile's mask) is
//! taken to name only lanes that exist. (A kernel that branches to the full mask only
//! when every lane is live compiles to a constant mask on that branch and is marked:
//! a refusal, never a wrong result; `reduce_partial` computes its mask without one.)

use std::collections::{BTreeMap, BTreeSet};

/// Intrinsics whose first operand is the member mask.
const MASK_FIRST: [&str; 4] = [
    "llvm.nvvm.shfl.sync.",
    "llvm.nvvm.vote.",
    "llvm.nvvm.match.",
    "llvm.nvvm.bar.warp.sync",
];
/// Intrinsics whose second operand is the member mask.
const MASK_SECOND: [&str; 1] = ["llvm.nvvm.redux.sync."];
/// Inline PTX that is warp-wide whatever the code says (`.sync.aligned`, no mask).
const WARP_WIDE_PTX: [&str; 5] = [
    "mma.sync.aligned",
    "ldmatrix.sync.aligned",
    "stmatrix.sync.aligned",
    "wgmma.",
    "setmaxnreg.",
];

/// For each of `entries` whose code reaches a full-warp collective, the first one
/// found (as its PTX spelling, e.g. `shfl.sync.bfly`).
pub fn whole_warp_users(ir: &str, entries: &[&str]) -> BTreeMap<String, String> {
    let functions = functions(ir);
    let mut found = BTreeMap::new();
    for entry in entries {
        let mut seen = BTreeSet::new();
        if let Some(what) = reaches(entry, &functions, &mut seen) {
            found.insert(entry.to_string(), what);
        }
    }
    found
}

/// A function's own full-warp collective, and the functions it calls.
#[derive(Default, Debug)]
struct Function {
    collective: Option<String>,
    callees: Vec<String>,
}

fn reaches(
    name: &str,
    functions: &BTreeMap<String, Function>,
    seen: &mut BTreeSet<String>,
) -> Option<String> {
    if !seen.insert(name.to_string()) {
        return None;
    }
    let f = functions.get(name)?;
    if let Some(c) = &f.collective {
        return Some(c.clone());
    }
    f.callees
        .iter()
        .find_map(|callee| reaches(callee, functions, seen))
}

/// Every function defined in the module, by name.
fn functions(ir: &str) -> BTreeMap<String, Function> {
    let mut out = BTreeMap::new();
    let mut current: Option<(String, Function)> = None;
    for line in ir.lines() {
        if line.starts_with("define ") {
            current = symbol_after(line, " @").map(|n| (n, Function::default()));
            continue;
        }
        if line.starts_with('}') {
            if let Some((name, f)) = current.take() {
                out.insert(name, f);
            }
            continue;
        }
        let Some((_, f)) = current.as_mut() else {
            continue;
        };
        if !line.contains("call ") {
            continue;
        }
        if f.collective.is_none() {
            f.collective = collective(line);
        }
        if let Some(callee) = symbol_after(line, "@").filter(|c| !c.starts_with("llvm.")) {
            f.callees.push(callee);
        }
    }
    out
}

/// The full-warp collective a call line makes, if any.
fn collective(line: &str) -> Option<String> {
    if let Some(at) = line.find(" asm ") {
        let text = &line[at..];
        return WARP_WIDE_PTX
            .iter()
            .find(|m| text.contains(*m))
            .map(|m| m.trim_end_matches(['.']).to_string());
    }
    let callee = symbol_after(line, "@")?;
    let operand = if MASK_FIRST.iter().any(|p| callee.starts_with(p)) {
        0
    } else if MASK_SECOND.iter().any(|p| callee.starts_with(p)) {
        1
    } else {
        return None;
    };
    let open = line.find(&format!("@{callee}("))? + callee.len() + 2;
    let args = &line[open..];
    let args = &args[..args.find(')')?];
    let mask = args.split(',').nth(operand)?.split_whitespace().last()?;
    (mask == "-1").then(|| ptx_name(&callee))
}

/// `llvm.nvvm.shfl.sync.bfly.i32` → `shfl.sync.bfly` (the PTX instruction).
fn ptx_name(intrinsic: &str) -> String {
    let name = intrinsic.trim_start_matches("llvm.nvvm.");
    name.split('.')
        .filter(|part| !matches!(*part, "i32" | "i64" | "f32" | "p" | "i1"))
        .collect::<Vec<_>>()
        .join(".")
}

/// The symbol named right after the first `marker` (`@name` or `@"name"`).
fn symbol_after(line: &str, marker: &str) -> Option<String> {
    let rest = &line[line.find(marker)? + marker.len()..];
    let rest = rest.strip_prefix('@').unwrap_or(rest);
    if let Some(quoted) = rest.strip_prefix('"') {
        return Some(quoted[..quoted.find('"')?].to_string());
    }
    let len = rest
        .bytes()
        .take_while(|&c| super::is_ident_char(c))
        .count();
    (len > 0).then(|| rest[..len].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODULE: &str = r#"
define ptx_kernel void @sums(ptr %0) {
  %a = tail call i32 @llvm.nvvm.read.ptx.sreg.laneid()
  %b = tail call i32 @helper(i32 %a)
  ret void
}

define internal i32 @helper(i32 %x) {
  %s = tail call i32 @llvm.nvvm.shfl.sync.bfly.i32(i32 -1, i32 %x, i32 16, i32 31)
  ret i32 %s
}

define ptx_kernel void @partial(i32 %live) {
  %m = shl i32 1, %live
  %s = call i32 @llvm.nvvm.shfl.sync.idx.i32(i32 %m, i32 1, i32 0, i32 31)
  %r = call i32 @llvm.nvvm.redux.sync.add(i32 %s, i32 %m)
  ret void
}

define ptx_kernel void @totals(i32 %v) {
  %r = call i32 @llvm.nvvm.redux.sync.umin(i32 %v, i32 -1)
  ret void
}

define ptx_kernel void @tensor(ptr %p) {
  %r = tail call { i32, i32 } asm sideeffect "{ .reg .u64 s; cvta.to.shared.u64 s, $2; ldmatrix.sync.aligned.m8n8.x2.shared.b16 {$0, $1}, [s]; }", "=r,=r,l"(ptr %p)
  ret void
}

define ptx_kernel void @"plain"(ptr %p) {
  call void @llvm.nvvm.barrier0()
  ret void
}
"#;

    #[test]
    fn full_mask_collectives_are_found_through_calls() {
        let found = whole_warp_users(MODULE, &["sums", "partial", "totals", "tensor", "plain"]);
        let want: BTreeMap<String, String> = [
            ("sums", "shfl.sync.bfly"),
            ("tensor", "ldmatrix.sync.aligned"),
            ("totals", "redux.sync.umin"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(found, want);
    }

    #[test]
    fn recursion_ends() {
        let ir =
            "define void @a() {\n  call void @b()\n}\ndefine void @b() {\n  call void @a()\n}\n";
        assert!(whole_warp_users(ir, &["a"]).is_empty());
    }
}
