//! The guard that `oxide_abi::names` promises (cuda-oxide keeps symbol naming in one crate
//! and rejects hard-coded prefixes elsewhere): outside oxide-abi, no Rust source spells a
//! reserved symbol prefix or a reserved section in a string literal, nor reads or sets an
//! environment variable of oxide-abi's table by a literal name, and no Python module of
//! pyoxide spells the emulator's reserved names outside the generated
//! `pyoxide/_manifest/abi.py`. The places that need a literal (`#[link_section = "…"]`
//! attributes) must equal oxide-abi's constant; tests may spell names, since they check them.

use std::path::{Path, PathBuf};

use oxide_abi::inputs::VARIABLES;
use oxide_abi::names;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            // Generated copies (pyoxide's kit) and build outputs are not sources.
            if !["target", "tests", "_rust", "_prebuilt", "__pycache__"].contains(&name.as_str()) {
                files(&path, ext, out);
            }
        } else if name.ends_with(ext) && name != "tests.rs" {
            out.push(path);
        }
    }
}

/// Where a literal stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// The value of a `link_section` attribute.
    Attribute,
    /// The name given to an environment function (`var_os("X")`, `.env_remove("X")`).
    EnvName,
    Other,
}

/// The string literals of Rust code, each with where it stands; test modules (`#[cfg(test)]` to the end of the file, as this
/// repository writes them) and comments are left out.
fn rust_literals(text: &str) -> Vec<(String, Place)> {
    let code = match text.find("#[cfg(test)]") {
        Some(at) => &text[..at],
        None => text,
    };
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '/' if chars.get(i + 1) == Some(&'/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                i += 2;
                while i + 1 < chars.len() && !(chars[i] == '*' && chars[i + 1] == '/') {
                    i += 1;
                }
                i += 2;
            }
            '\'' if chars.get(i + 2) == Some(&'\'') => i += 3, // 'x'
            '\'' if chars.get(i + 1) == Some(&'\\') => {
                i += 2;
                while i < chars.len() && chars[i] != '\'' {
                    i += 1;
                }
                i += 1;
            }
            '"' => {
                let before: String = chars[i.saturating_sub(40)..i].iter().collect();
                let before = before.trim_end();
                let env_calls = [
                    "var_os(",
                    "var(",
                    "env(",
                    "env_remove(",
                    "set_var(",
                    "remove_var(",
                ];
                let place = if before.ends_with("link_section =") {
                    Place::Attribute
                } else if env_calls.iter().any(|c| before.ends_with(c)) {
                    Place::EnvName
                } else {
                    Place::Other
                };
                let mut s = String::new();
                i += 1;
                while i < chars.len() && chars[i] != '"' {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    s.push(chars[i]);
                    i += 1;
                }
                i += 1;
                out.push((s, place));
            }
            _ => i += 1,
        }
    }
    out
}

fn reserved_in(literal: &str, place: Place) -> Option<&'static str> {
    let sections = [
        names::DESCRIPTOR_SECTION,
        names::SHARED_SECTION,
        names::CONSTANT_SECTION,
    ];
    if literal.contains(names::RESERVED_PREFIX) {
        return Some(names::RESERVED_PREFIX);
    }
    if let Some(s) = sections.iter().find(|s| literal.contains(*s)) {
        return Some(s);
    }
    let variable = VARIABLES.iter().find(|v| !v.prefix && literal == v.name);
    variable.filter(|_| place == Place::EnvName).map(|v| v.name)
}

#[test]
fn reserved_names_are_spelled_in_oxide_abi_only() {
    let repo = repo();
    let mut sources = Vec::new();
    for dir in ["crates", "kernels_rs", "kernels_sm90a"] {
        files(&repo.join(dir), ".rs", &mut sources);
    }
    sources.retain(|p| !p.starts_with(repo.join("crates/oxide-abi")));
    assert!(sources.len() > 80, "found only {} sources", sources.len());
    let sections = [
        names::DESCRIPTOR_SECTION,
        names::SHARED_SECTION,
        names::CONSTANT_SECTION,
    ];
    let mut spelled = Vec::new();
    for path in &sources {
        let text = std::fs::read_to_string(path).unwrap();
        for (literal, place) in rust_literals(&text) {
            if place == Place::Attribute && sections.contains(&literal.as_str()) {
                continue; // an attribute needs the literal; it is oxide-abi's
            }
            if let Some(name) = reserved_in(&literal, place) {
                let rel = path.strip_prefix(&repo).unwrap_or(path).display();
                spelled.push(format!("{rel}: \"{literal}\" spells {name}"));
            }
        }
    }
    assert!(
        spelled.is_empty(),
        "use oxide_abi's constants instead:\n{}",
        spelled.join("\n")
    );
}

#[test]
fn pyoxide_takes_the_emulators_names_from_the_generated_abi() {
    let repo = repo();
    let mut sources = Vec::new();
    files(&repo.join("pyoxide"), ".py", &mut sources);
    let generated = repo.join("pyoxide").join("_manifest").join("abi.py");
    sources.retain(|p| *p != generated);
    assert!(sources.len() > 30);
    let quoted = |s: &str| [format!("\"{s}"), format!("'{s}")];
    let mut spelled = Vec::new();
    for path in &sources {
        let text = std::fs::read_to_string(path).unwrap();
        for name in [names::RESERVED_PREFIX, names::DESCRIPTOR_SECTION] {
            if quoted(name).iter().any(|q| text.contains(q.as_str())) {
                spelled.push(format!("{}: {name}", path.display()));
            }
        }
    }
    assert!(
        spelled.is_empty(),
        "use pyoxide._manifest.abi's copies: {spelled:?}"
    );
}

#[test]
fn the_guard_sees_a_hard_coded_name() {
    let text = "fn f() { let s = \"__oxide_host_x\"; }\n\
                #[unsafe(link_section = \".oxide.shared\")] static A: u8 = 0;\n\
                // \"__oxide in a comment\"\n\
                const C: char = '\"'; const D: &str = \".oxide.kernels\";\n\
                fn g() { std::env::var_os(\"OXIDE_NO_FMAD\"); h(\"PATH\"); }\n\
                #[cfg(test)] mod tests { const T: &str = \"__oxide_t\"; }";
    let found: Vec<_> = rust_literals(text)
        .into_iter()
        .filter(|(l, place)| *place != Place::Attribute && reserved_in(l, *place).is_some())
        .map(|(l, _)| l)
        .collect();
    assert_eq!(found, ["__oxide_host_x", ".oxide.kernels", "OXIDE_NO_FMAD"]);
}
