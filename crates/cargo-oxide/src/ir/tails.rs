//! One panic path per function, after `opt -O3`: what lets a kernel's bounds checks
//! become one branch.
//!
//! Every failed bounds check ends in the same block, `call @panic_bounds_check()`
//! then `unreachable` (dead-argument elimination has removed the index, length and
//! location, which the device's panic handler never reads). O3 leaves one copy per
//! check, and with distinct targets `x[i]` and `y[i]` stay two branches, each waiting
//! for its length before the next load may issue. [`merge_noreturn_tails`] points every
//! branch at the first copy; `simplifycfg` then folds the checks into one condition
//! (`i < min(len x, len y)`) and drops the unused copies.

use std::collections::BTreeMap;

/// A basic block's label as it begins its line (`38:` or `bb3:`), if the line is one.
fn block_label(line: &str) -> Option<&str> {
    let len = line
        .bytes()
        .take_while(|&c| super::is_ident_char(c))
        .count();
    let rest = &line[len..];
    (len > 0 && rest.starts_with(':') && !line.starts_with(' ')).then(|| &line[..len])
}

/// The call of a block that is exactly `call <noreturn fn>()` then `unreachable`, with
/// the callee taking no arguments (so every copy is the same call), else None.
fn noreturn_tail<'a>(body: &[&'a str]) -> Option<&'a str> {
    let code: Vec<&str> = body
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty() && !l.starts_with(';'))
        .collect();
    match code[..] {
        [call, "unreachable"] if call.contains(" call ") || call.starts_with("call ") => {
            let open = call.find("@")?;
            // `@name()` followed by nothing or attribute groups only.
            let after = &call[open..];
            let close = after.find("()")?;
            let rest = after[close + 2..].trim();
            (!after[..close].contains('(')
                && !call.contains("!dbg")
                && rest.split_whitespace().all(|w| w.starts_with('#')))
            .then_some(call)
        }
        _ => None,
    }
}

/// Point every branch of each function at one copy of each identical noreturn tail
/// block (see the module's doc). Returns the text and whether anything changed; the
/// other copies are left in place, unreferenced, for `simplifycfg` to delete (deleting
/// numbered blocks here would break the IR's numbering).
pub fn merge_noreturn_tails(ir: &str) -> (String, bool) {
    let lines: Vec<&str> = ir.lines().collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut changed = false;
    let mut i = 0;
    while i < lines.len() {
        if !(lines[i].starts_with("define ") && lines[i].trim_end().ends_with('{')) {
            out.push(lines[i].to_string());
            i += 1;
            continue;
        }
        let end = (i..lines.len())
            .find(|&j| lines[j] == "}")
            .unwrap_or(lines.len() - 1);
        let body = &lines[i..=end];
        // Each block: its label and the lines up to the next label or the end.
        let starts: Vec<usize> = (1..body.len())
            .filter(|&k| block_label(body[k]).is_some())
            .collect();
        let mut first: BTreeMap<&str, &str> = BTreeMap::new();
        let mut renamed: BTreeMap<String, String> = BTreeMap::new();
        for (n, &s) in starts.iter().enumerate() {
            let stop = starts.get(n + 1).copied().unwrap_or(body.len() - 1);
            let label = block_label(body[s]).expect("a label");
            if let Some(call) = noreturn_tail(&body[s + 1..stop]) {
                match first.get(call) {
                    Some(keep) => {
                        renamed.insert(format!("label %{label}"), format!("label %{keep}"));
                    }
                    None => {
                        first.insert(call, label);
                    }
                }
            }
        }
        for line in body {
            out.push(if renamed.is_empty() {
                line.to_string()
            } else {
                redirect(line, &renamed)
            });
        }
        changed |= !renamed.is_empty();
        i = end + 1;
    }
    let mut text = out.join("\n");
    if ir.ends_with('\n') {
        text.push('\n');
    }
    (text, changed)
}

/// `line` with each `label %X` in `renamed` replaced (whole names only).
fn redirect(line: &str, renamed: &BTreeMap<String, String>) -> String {
    if !line.contains("label %") {
        return line.to_string();
    }
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(at) = rest.find("label %") {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let len = "label %".len()
            + tail["label %".len()..]
                .bytes()
                .take_while(|&c| super::is_ident_char(c))
                .count();
        let word = &tail[..len];
        out.push_str(renamed.get(word).map_or(word, String::as_str));
        rest = &tail[len..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAXPY: &str = "\
define ptx_kernel void @saxpy(i64 %0, i64 %1, i64 %2) {
  %4 = icmp ult i64 %2, %0
  br i1 %4, label %5, label %7

5:                                                ; preds = %3
  %6 = icmp ult i64 %2, %1
  br i1 %6, label %8, label %9

7:                                                ; preds = %3
  tail call fastcc void @panic_bounds_check() #8
  unreachable

8:
  ret void

9:                                                ; preds = %5
  tail call fastcc void @panic_bounds_check() #8
  unreachable
}
";

    #[test]
    fn identical_panic_blocks_get_one_target() {
        let (text, changed) = merge_noreturn_tails(SAXPY);
        assert!(changed);
        assert!(text.contains("br i1 %6, label %8, label %7\n"), "{text}");
        assert!(text.contains("br i1 %4, label %5, label %7\n"), "{text}");
        // The unreferenced copy stays for simplifycfg (renumbering is opt's job).
        assert_eq!(text.matches("@panic_bounds_check()").count(), 2);
        assert_eq!(text.lines().count(), SAXPY.lines().count());
    }

    #[test]
    fn calls_with_arguments_or_other_callees_are_left_alone() {
        let other = SAXPY.replacen(
            "9:                                                ; preds = %5\n  tail call fastcc void @panic_bounds_check() #8",
            "9:\n  tail call fastcc void @panic_fmt() #8",
            1,
        );
        assert_eq!(merge_noreturn_tails(&other), (other.clone(), false));
        let args = SAXPY.replace("@panic_bounds_check()", "@panic_bounds_check(i64 %2)");
        assert_eq!(merge_noreturn_tails(&args), (args.clone(), false));
        // A label that merely starts like another is not renamed.
        let text = "define void @f() {\n  br label %70\n}\n";
        assert_eq!(
            redirect(
                "  br label %70",
                &BTreeMap::from([("label %7".into(), "label %5".into())])
            ),
            "  br label %70"
        );
        assert_eq!(merge_noreturn_tails(text), (text.to_string(), false));
    }
}
