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

use super::{StaticDef, cast_uses, defined_global, in_section};

/// Move constant statics to address space 4; returns the text and their names.
pub fn move_constant_statics(ir: &str) -> Result<(String, Vec<String>)> {
    let mut moved: Vec<String> = Vec::new();
    let mut lines: Vec<String> = Vec::new();
    for line in ir.lines() {
        let Some(name) = defined_global(line).filter(|_| in_section(line, CONSTANT_SECTION)) else {
            lines.push(line.to_string());
            continue;
        };
        let def = StaticDef::read(line, "constant", name)?;
        let Some(init_end) = def.after_ty.find(", section ") else {
            bail!("constant static @{name} has no section: {line}");
        };
        let init = def.after_ty[..init_end].trim();
        lines.push(format!(
            "@{name} = addrspace(4) externally_initialized global {} {init}, align {}{}",
            def.ty, def.align, def.dbg
        ));
        moved.push(name.to_string());
    }
    let text = cast_uses(&lines, &moved, 4);
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
