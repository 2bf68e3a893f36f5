//! `#[constant]` statics (cuda-oxide's `ConstantMemory<T>`) to NVPTX constant memory.
//!
//! rustc puts every static in global memory; statics the macro placed in
//! [`CONSTANT_SECTION`] move to address space 4 (`.const`), keeping their external
//! linkage (the host finds them by name: `cuModuleGetGlobal`) and marked
//! `externally_initialized`, so the optimiser does not fold their loads to the
//! placeholder value the Rust source gives them. Uses see them through an
//! `addrspacecast` to the generic address space, as shared statics do.

use anyhow::{Result, bail};
use oxide_abi::names::CONSTANT_SECTION;

use super::{defined_global, in_section, replace_uses, type_prefix};

/// Move constant statics to address space 4; returns the text and their names.
pub fn move_constant_statics(ir: &str) -> Result<(String, Vec<String>)> {
    let mut moved: Vec<String> = Vec::new();
    let mut lines: Vec<String> = Vec::new();
    for line in ir.lines() {
        let Some(name) = defined_global(line).filter(|_| in_section(line, CONSTANT_SECTION)) else {
            lines.push(line.to_string());
            continue;
        };
        // `@n = <linkage and flags> global|constant <type> <init>, section "…", align A[, !dbg …]`
        let Some(kw) = line.find(" global ").or_else(|| line.find(" constant ")) else {
            bail!("cannot read the constant static's definition: {line}");
        };
        let rest = line[kw..]
            .trim_start_matches(" global ")
            .trim_start_matches(" constant ");
        let Some(ty) = type_prefix(rest) else {
            bail!("cannot read the type of constant static @{name}: {line}");
        };
        let Some(init_end) = rest.find(", section ") else {
            bail!("constant static @{name} has no section: {line}");
        };
        let init = rest[ty.len()..init_end].trim();
        let align = line
            .split(", align ")
            .nth(1)
            .map(|a| a.split(|c: char| !c.is_ascii_digit()).next().unwrap_or("1"))
            .unwrap_or("1");
        let dbg = line.find(", !dbg").map(|i| &line[i..]).unwrap_or("");
        lines.push(format!(
            "@{name} = addrspace(4) externally_initialized global {ty} {init}, align {align}{dbg}"
        ));
        moved.push(name.to_string());
    }
    let mut text = String::with_capacity(ir.len() + 64);
    for line in &lines {
        let is_definition = defined_global(line).is_some_and(|n| moved.iter().any(|s| s == n));
        let mut line = line.clone();
        if !is_definition {
            for name in &moved {
                let cast = format!("addrspacecast (ptr addrspace(4) @{name} to ptr)");
                line = replace_uses(&line, name, &cast);
            }
        }
        text.push_str(&line);
        text.push('\n');
    }
    Ok((text, moved))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_constant_static_moves_to_const_and_its_uses_follow() {
        let ir = "@COEFFS = global <{ [16 x i8] }> zeroinitializer, section \".oxide.constant\", align 4\n\
                  define void @k(ptr %o) {\n  %v = load float, ptr @COEFFS, align 4\n  ret void\n}\n";
        let (text, moved) = move_constant_statics(ir).unwrap();
        assert_eq!(moved, ["COEFFS"]);
        assert!(text.contains(
            "@COEFFS = addrspace(4) externally_initialized global <{ [16 x i8] }> zeroinitializer, align 4"
        ));
        assert!(text.contains("load float, ptr addrspacecast (ptr addrspace(4) @COEFFS to ptr)"));
    }
}
