//! From the optimised module to verified PTX: `llc` per architecture, then `ptxas`,
//! whose resource report (registers, shared memory, spills) goes into the manifest.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use oxide_abi::descriptor::KernelDescriptor;
use oxide_abi::limits::{MIN_CLUSTER_ARCH, MIN_DEPENDENT_LAUNCH_ARCH};
use oxide_abi::manifest::{KernelResources, PtxasDiagnostic, PtxasLevel};

use crate::toolchain::Ptxas;

/// Check an architecture name (`sm_80`, `sm_90a`, `sm_100f`) by oxide-abi's one rule and
/// return its number.
pub fn parse_arch(arch: &str) -> Result<u32> {
    oxide_abi::arch::parse(arch)
        .map(|a| a.number)
        .map_err(|e| anyhow::anyhow!(e.message(arch)))
}

/// Compile the module to PTX for one architecture. With `fmad`, the NVPTX backend
/// fuses a multiply feeding an add or subtract into one `fma.rn` (nvcc's `--fmad=true`);
/// without it, it writes `mul.rn` and `add.rn`, whose explicit rounding also stops
/// ptxas from fusing them.
pub fn llc(
    llc: &Path,
    module: &Path,
    arch: &str,
    optimize: bool,
    fmad: bool,
    out: &Path,
) -> Result<()> {
    run_tool(
        Command::new(llc)
            .arg(if optimize { "-O3" } else { "-O0" })
            .arg(if fmad {
                "-fp-contract=fast"
            } else {
                "-fp-contract=off"
            })
            .arg("-mtriple=nvptx64-nvidia-cuda")
            .arg(format!("-mcpu={arch}"))
            .arg(module)
            .arg("-o")
            .arg(out),
        || format!("llc could not compile the kernels for {arch}"),
    )?;
    Ok(())
}

/// Run `cmd` (llc, ptxas, llvm-link, opt) to the end: its stderr, or an error that says
/// `failed()` with that stderr below it.
pub fn run_tool(cmd: &mut Command, failed: impl FnOnce() -> String) -> Result<String> {
    let output = cmd
        .output()
        .with_context(|| format!("running {}", Path::new(cmd.get_program()).display()))?;
    let log = String::from_utf8_lossy(&output.stderr).into_owned();
    if !output.status.success() {
        bail!("{}:\n{log}", failed());
    }
    Ok(log)
}

/// The `.version` the PTX declares.
pub fn ptx_version(ptx: &str) -> Option<String> {
    ptx.lines()
        .find_map(|l| l.trim().strip_prefix(".version "))
        .map(|v| v.trim().to_string())
}

/// What ptxas said of one PTX: each entry's resources and diagnostics, and the
/// diagnostics that name no entry.
#[derive(Debug, Default)]
pub struct PtxasReport {
    pub entries: BTreeMap<String, KernelResources>,
    pub unattributed: Vec<PtxasDiagnostic>,
}

/// Assemble the PTX with ptxas (output discarded): a PTX that ptxas rejects is a build
/// error carrying ptxas's message. Returns its report.
pub fn verify(ptxas: &Ptxas, ptx: &Path, arch: &str) -> Result<PtxasReport> {
    let log = run_tool(
        Command::new(&ptxas.path)
            .arg(format!("-arch={arch}"))
            .arg("-v")
            .arg(ptx)
            .arg("-o")
            .arg("/dev/null"),
        || format!("ptxas rejected {} for {arch}", ptx.display()),
    )?;
    Ok(parse_report(&log))
}

/// Read ptxas's `-v` report. Lines of interest, per entry:
/// `Compiling entry function 'NAME' for 'sm_90'`,
/// `N bytes stack frame, N bytes spill stores, N bytes spill loads`,
/// `Used N registers, used N barriers, N bytes smem, …`;
/// and its diagnostics (`ptxas warning : …`, `ptxas info : (Cnnnn) …`), which it prints
/// before any entry's report, each naming the function it is about, if any.
pub fn parse_report(log: &str) -> PtxasReport {
    let mut report = PtxasReport::default();
    let mut diagnostics = Vec::new();
    let mut current: Option<String> = None;
    for line in log.lines() {
        if let Some(d) = diagnostic(line) {
            diagnostics.push(d);
            continue;
        }
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or("").to_string();
            report
                .entries
                .insert(name.clone(), KernelResources::default());
            current = Some(name);
            continue;
        }
        // ptxas also reports the device functions it kept out of line (a panic's
        // `core::option::expect_failed`, say) after an entry's report, each under its own
        // `Function properties for`: those lines are not the entry's (read as the entry's,
        // their zeros overwrote its stack and spills).
        if let Some(rest) = line.split("Function properties for ").nth(1) {
            let name = rest.trim();
            current = report.entries.contains_key(name).then(|| name.to_string());
            continue;
        }
        let Some(entry) = current.as_ref().and_then(|n| report.entries.get_mut(n)) else {
            continue;
        };
        for part in line.split(',') {
            let words: Vec<&str> = part.split_whitespace().collect();
            let number = |i: usize| words.get(i).and_then(|w| w.parse::<u64>().ok());
            match words.as_slice() {
                [.., "Used", _, "registers"] => {
                    entry.registers = number(words.len() - 2).unwrap_or(0) as u32
                }
                ["used", _, "barriers"] => entry.barriers = number(1).unwrap_or(0) as u32,
                [_, "bytes", "smem"] => entry.shared_bytes = number(0).unwrap_or(0),
                [_, "bytes", "stack", "frame"] => entry.stack_frame_bytes = number(0).unwrap_or(0),
                [_, "bytes", "spill", "stores"] => entry.spill_store_bytes = number(0).unwrap_or(0),
                [_, "bytes", "spill", "loads"] => entry.spill_load_bytes = number(0).unwrap_or(0),
                _ => {}
            }
        }
    }
    // Only now are the entries known: the diagnostics came first.
    for d in diagnostics {
        let entry = named_function(&d.message).and_then(|n| report.entries.get_mut(n));
        match entry {
            Some(entry) => entry.diagnostics.push(d),
            None => report.unattributed.push(d),
        }
    }
    report
}

/// A `ptxas warning : …` line, or a `ptxas info : (Cnnnn) …` one (ptxas's performance
/// advice; its info lines without a code are the report itself).
fn diagnostic(line: &str) -> Option<PtxasDiagnostic> {
    let (label, text) = line.strip_prefix("ptxas ")?.split_once(':')?;
    let level = match label.trim() {
        "info" => PtxasLevel::Info,
        "warning" => PtxasLevel::Warning,
        _ => return None,
    };
    let text = text.trim();
    let coded = text
        .strip_prefix('(')
        .and_then(|t| t.split_once(") "))
        .filter(|(code, _)| code.starts_with('C') && code[1..].bytes().all(|b| b.is_ascii_digit()));
    let (code, message) = match coded {
        Some((code, message)) => (Some(code.to_string()), message),
        None if level == PtxasLevel::Info => return None,
        None => (None, text),
    };
    Some(PtxasDiagnostic {
        level,
        code,
        message: message.to_string(),
    })
}

/// The function a diagnostic is about: `… in the function 'NAME' …`,
/// `… for entry function 'NAME' …`.
fn named_function(message: &str) -> Option<&str> {
    message.split("function '").nth(1)?.split('\'').next()
}

/// Instructions that exist only on an architecture-specific target (`sm_90a`,
/// `sm_100a`): their PTX does not assemble for the plain `sm_NN`, nor run on any other
/// device. (opcode prefix, the target that has it)
const ARCH_SPECIFIC: &[(&str, &str)] = &[
    ("wgmma.", "sm_90a"),
    ("setmaxnreg.", "sm_90a"),
    ("tcgen05.", "sm_100a"),
];

/// Refuse, naming the kernel and the instruction, a PTX for a plain (or family)
/// target that uses an instruction only an `a` target has. ptxas would refuse it
/// too, but without saying which kernel or what to build instead.
pub fn check_arch_specific(ptx: &str, arch: &str) -> Result<()> {
    if arch.ends_with('a') {
        return Ok(());
    }
    let mut function = "(module scope)";
    for line in ptx.lines() {
        let t = line.trim_start();
        if let Some(rest) = t.split(".entry ").nth(1).or_else(|| {
            t.strip_prefix(".func ")
                .or_else(|| t.split(".func ").nth(1))
        }) {
            let name = rest.rsplit(' ').next().unwrap_or(rest);
            function = name.split('(').next().unwrap_or(name).trim();
            continue;
        }
        for (op, target) in ARCH_SPECIFIC {
            if t.starts_with(op)
                || t.contains(&format!("; {op}"))
                || t.contains(&format!("}} {op}"))
            {
                let op = t
                    .split_whitespace()
                    .next()
                    .unwrap_or(op)
                    .trim_end_matches(';');
                bail!(
                    "kernel `{function}` uses `{op}`, which only {target} has, but this build \
                     is for {arch}: build it for the arch-specific target (`--arch {target}`; \
                     that PTX runs only on that exact compute capability), and keep kernels \
                     for other targets in a crate of their own"
                );
            }
        }
    }
    Ok(())
}

/// Refuse to build a kernel for a target older than a launch feature it asks for:
/// `#[cluster_launch]` from `MIN_CLUSTER_ARCH` (LLVM would drop its `.reqnctapercluster`
/// without a word, and the kernel would run with one block per cluster) and
/// `#[dependent_launch]` from `MIN_DEPENDENT_LAUNCH_ARCH` (no `griddepcontrol`: ptxas would
/// refuse its instructions with less of an explanation).
pub fn check_feature_archs(kernels: &[KernelDescriptor], archs: &[String]) -> Result<()> {
    let targets = archs
        .iter()
        .map(|arch| Ok((parse_arch(arch)?, arch)))
        .collect::<Result<Vec<_>>>()?;
    for k in kernels {
        let cluster = k.cluster.map(|[x, y, z]| {
            let attribute = format!("#[cluster_launch({x}, {y}, {z})]");
            (attribute, "thread-block clusters", MIN_CLUSTER_ARCH)
        });
        let dependent = k.dependent_launch.then(|| {
            let attribute = "#[dependent_launch]".to_string();
            (
                attribute,
                "programmatic dependent launch",
                MIN_DEPENDENT_LAUNCH_ARCH,
            )
        });
        for (attribute, feature, min) in cluster.into_iter().chain(dependent) {
            if let Some((_, arch)) = targets.iter().find(|(number, _)| *number < min) {
                bail!(
                    "kernel `{}` has {attribute}, but this build is also for {arch}, which has \
                     no {feature} (it starts at sm_{min}): build for sm_{min} or newer only \
                     (e.g. --arch sm_{min}; from Python, pyoxide.load(crate, arch=\"sm_{min}\") \
                     or PYOXIDE_ARCH=sm_{min}), and keep kernels for older GPUs in a crate of \
                     their own",
                    k.entry
                );
            }
        }
    }
    Ok(())
}

/// Refuse a `#[dependent_launch]` kernel whose PTX never waits for the grid before it
/// (`griddepcontrol.wait`): launched as a dependent, it would read and write memory while
/// that grid may still be running.
pub fn check_dependent_waits(ptx: &str, kernels: &[KernelDescriptor]) -> Result<()> {
    for k in kernels.iter().filter(|k| k.dependent_launch) {
        let Some(body) = entry_text(ptx, &k.entry) else {
            continue; // not in this PTX (another crate's, or optimised away)
        };
        if !body.contains("griddepcontrol.wait") {
            bail!(
                "kernel `{}` has #[dependent_launch] but never calls \
                 oxide_device::grid::griddepcontrol_wait(): launched as a dependent it would \
                 start while the kernel before it is still running. Call it before the \
                 kernel's first global-memory access, or remove #[dependent_launch]",
                k.entry
            );
        }
    }
    Ok(())
}

/// The text of one `.entry` in a PTX file, from its declaration to its closing brace.
pub fn entry_text<'a>(ptx: &'a str, entry: &str) -> Option<&'a str> {
    let decl = format!(".entry {entry}(");
    let start = ptx.find(&decl)?;
    let line_start = ptx[..start].rfind('\n').map_or(0, |i| i + 1);
    let end = ptx[start..].find("\n}").map(|i| start + i + 2)?;
    Some(&ptx[line_start..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    const WGMMA: &str = "\
.visible .entry gemm_sm90(
\t.param .u64 gemm_sm90_param_0
)
{
\twgmma.fence.sync.aligned;
\t{ .reg .pred p; setp.ne.b32 p, 1, 0; wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%f1}, %rd1, %rd2, p, 1, 1; }
}
";

    /// A kernel `k` without parameters whose PTX entry is `entry`.
    fn descriptor(entry: &str) -> KernelDescriptor {
        serde_json::from_value(serde_json::json!({
            "version": 1, "name": "k", "entry": entry, "params": [],
            "source": {"module": "m", "file": "f", "line": 1},
        }))
        .unwrap()
    }

    #[test]
    fn cluster_kernels_are_refused_below_sm_90() {
        let mut k = descriptor("k");
        let archs = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // No cluster: any target.
        check_feature_archs(std::slice::from_ref(&k), &archs(&["sm_80"])).unwrap();
        k.cluster = Some([2, 1, 1]);
        let e = check_feature_archs(std::slice::from_ref(&k), &archs(&["sm_90", "sm_80"]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("kernel `k` has #[cluster_launch(2, 1, 1)]")
                && e.contains("sm_80")
                && e.contains("--arch sm_90"),
            "{e}"
        );
        check_feature_archs(
            std::slice::from_ref(&k),
            &archs(&["sm_90", "sm_90a", "sm_100"]),
        )
        .unwrap();
    }

    #[test]
    fn dependent_kernels_must_wait_and_target_sm_90() {
        let mut k = descriptor("gemm_sm90");
        let archs = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // An ordinary kernel: no wait needed, any target.
        check_dependent_waits(WGMMA, std::slice::from_ref(&k)).unwrap();
        check_feature_archs(std::slice::from_ref(&k), &archs(&["sm_80"])).unwrap();
        k.dependent_launch = true;
        let e = check_dependent_waits(WGMMA, std::slice::from_ref(&k))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("kernel `gemm_sm90` has #[dependent_launch] but never calls")
                && e.contains("griddepcontrol_wait()"),
            "{e}"
        );
        let waits = WGMMA.replace("\twgmma.fence", "\tgriddepcontrol.wait;\n\twgmma.fence");
        check_dependent_waits(&waits, std::slice::from_ref(&k)).unwrap();
        // A kernel this PTX does not hold is another file's to check.
        k.entry = "elsewhere".into();
        check_dependent_waits(WGMMA, std::slice::from_ref(&k)).unwrap();
        let e = check_feature_archs(std::slice::from_ref(&k), &archs(&["sm_90", "sm_80"]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "kernel `elsewhere` has #[dependent_launch], but this build is also for sm_80"
            ),
            "{e}"
        );
        check_feature_archs(std::slice::from_ref(&k), &archs(&["sm_90", "sm_90a"])).unwrap();
        // Every kernel is checked against its own features, not only the first that has one.
        let mut clustered = descriptor("clustered");
        clustered.cluster = Some([2, 1, 1]);
        let both = [clustered, k];
        check_feature_archs(&both, &archs(&["sm_90"])).unwrap();
        let e = check_feature_archs(&both, &archs(&["sm_75"]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("kernel `clustered` has #[cluster_launch(2, 1, 1)]"),
            "{e}"
        );
        let e = check_feature_archs(&both[1..], &archs(&["sm_75"]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no programmatic dependent launch (it starts at sm_90)"),
            "{e}"
        );
    }

    #[test]
    fn arch_specific_instructions_are_refused_for_plain_targets() {
        let e = check_arch_specific(WGMMA, "sm_90").unwrap_err().to_string();
        assert!(
            e.contains("kernel `gemm_sm90` uses `wgmma.fence.sync.aligned`"),
            "{e}"
        );
        assert!(
            e.contains("only sm_90a has") && e.contains("--arch sm_90a"),
            "{e}"
        );
        assert!(check_arch_specific(WGMMA, "sm_100f").is_err());
        check_arch_specific(WGMMA, "sm_90a").unwrap();
        check_arch_specific(
            ".visible .entry k(\n)\n{\n\tmma.sync.aligned.m16n8k16;\n}\n",
            "sm_80",
        )
        .unwrap();
    }

    const REPORT: &str = "\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'vecadd' for 'sm_90'
ptxas info    : Function properties for vecadd
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 1 barriers, 1024 bytes smem
ptxas info    : Compiling entry function 'saxpy' for 'sm_90'
ptxas info    : Function properties for saxpy
    16 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads
ptxas info    : Used 255 registers, 380 bytes cmem[0]
ptxas info    : Compile time = 3.054 ms
ptxas info    : Function properties for _RNvNtCs1_4core6option13expect_failed
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'scale' for 'sm_90'
ptxas info    : Function properties for scale
    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers
ptxas info    : Function properties for _RNvNtCs1_4core9panicking5panic
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
";

    #[test]
    fn resource_report_is_read_per_entry() {
        let report = parse_report(REPORT);
        assert!(report.unattributed.is_empty());
        assert!(report.entries.values().all(|e| e.diagnostics.is_empty()));
        let r = report.entries;
        // (the out-of-line device functions are not entries, and their zeros are not
        // the entries' before them)
        assert_eq!(r.keys().collect::<Vec<_>>(), ["saxpy", "scale", "vecadd"]);
        assert_eq!(
            (r["scale"].registers, r["scale"].stack_frame_bytes),
            (12, 8)
        );
        let v = &r["vecadd"];
        assert_eq!((v.registers, v.barriers, v.shared_bytes), (10, 1, 1024));
        let s = &r["saxpy"];
        assert_eq!(
            (
                s.registers,
                s.stack_frame_bytes,
                s.spill_store_bytes,
                s.spill_load_bytes
            ),
            (255, 16, 4, 8)
        );
        assert_eq!(s.shared_bytes, 0);
    }

    /// ptxas 13's own text: the C7512 lines of a kernels_sm90a build whose ping-pong
    /// attention drained its ring after the tile loop (two of its twelve), then lines
    /// of hand-made PTX: C7508 (names no function), C7509 (names a device function), a
    /// warning naming an entry. ptxas prints them all before any entry's report.
    const DIAGNOSED: &str = "\
ptxas info    : (C7508) Potential Performance Loss: 'setmaxnreg' ignored; unable to determine register count at entry.
ptxas info    : (C7512) Potential Performance Loss: wgmma.mma_async instructions are serialized due to insufficient register resources for the function 'attention_sm90_bf16_1_1_192'
ptxas info    : (C7512) Potential Performance Loss: wgmma.mma_async instructions are serialized due to insufficient register resources for the function 'attention_sm90_bf16_1_1_128'
ptxas info    : (C7509) Potential Performance Loss: wgmma.mma_async instructions are serialized due to the presence of Extern calls in the function 'ext_fn' in line 15
ptxas warning : Stack size for entry function 'attention_sm90_bf16_0_0_128' cannot be statically determined
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'attention_sm90_bf16_1_1_128' for 'sm_90a'
ptxas info    : Function properties for attention_sm90_bf16_1_1_128
    784 bytes stack frame, 2664 bytes spill stores, 2756 bytes spill loads
ptxas info    : Used 128 registers, used 16 barriers, 784 bytes cumulative stack size
ptxas info    : Compile time = 744.946 ms
ptxas info    : Function properties for _RNvNtCsduWobj5wX1U_4core6option13expect_failed
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'attention_sm90_bf16_0_0_128' for 'sm_90a'
ptxas info    : Function properties for attention_sm90_bf16_0_0_128
    40 bytes stack frame, 88 bytes spill stores, 104 bytes spill loads
ptxas info    : Used 128 registers, used 16 barriers, 40 bytes cumulative stack size
ptxas info    : Compile time = 469.961 ms
";

    #[test]
    fn diagnostics_go_to_the_entry_they_name() {
        let report = parse_report(DIAGNOSED);
        let serial = &report.entries["attention_sm90_bf16_1_1_128"];
        assert_eq!((serial.registers, serial.spill_store_bytes), (128, 2664));
        let [d] = serial.diagnostics.as_slice() else {
            panic!("{:?}", serial.diagnostics)
        };
        assert_eq!(
            (d.level, d.code.as_deref()),
            (PtxasLevel::Info, Some("C7512"))
        );
        assert!(d.serializes_wgmma());
        assert_eq!(
            d.to_string(),
            "(C7512) Potential Performance Loss: wgmma.mma_async instructions are serialized \
             due to insufficient register resources for the function \
             'attention_sm90_bf16_1_1_128'"
        );
        // A warning without a code, naming the entry that follows it.
        let other = &report.entries["attention_sm90_bf16_0_0_128"];
        let [w] = other.diagnostics.as_slice() else {
            panic!("{:?}", other.diagnostics)
        };
        assert_eq!((w.level, w.code.as_deref()), (PtxasLevel::Warning, None));
        assert!(!w.serializes_wgmma() && w.message.starts_with("Stack size for entry"));
        assert_eq!(other.stack_frame_bytes, 40);
        // No entry of this PTX by that name (another PTX's entry, a device function),
        // or no name at all: the artifact's.
        let codes: Vec<_> = report
            .unattributed
            .iter()
            .map(|d| d.code.as_deref().unwrap_or(""))
            .collect();
        assert_eq!(codes, ["C7508", "C7512", "C7509"]);
        assert!(report.unattributed[2].serializes_wgmma());
    }

    #[test]
    fn architectures_are_checked() {
        assert_eq!(parse_arch("sm_80").unwrap(), 80);
        assert_eq!(parse_arch("sm_90a").unwrap(), 90);
        assert_eq!(parse_arch("sm_100f").unwrap(), 100);
        assert_eq!(parse_arch("sm_75").unwrap(), 75);
        for bad in [
            "80",
            "sm_",
            "sm_3",
            "compute_80",
            "sm_8x",
            "sm_50",
            "sm_70",
            "sm_74",
        ] {
            assert!(parse_arch(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn entry_text_is_one_function() {
        let ptx = ".version 7.8\n.visible .entry a(\n.param .u64 p\n)\n{\nret;\n}\n.visible .entry b(\n)\n{\nret;\n}\n";
        assert_eq!(
            entry_text(ptx, "a").unwrap(),
            ".visible .entry a(\n.param .u64 p\n)\n{\nret;\n}"
        );
        assert!(entry_text(ptx, "c").is_none());
        assert_eq!(ptx_version(ptx).as_deref(), Some("7.8"));
    }
}
