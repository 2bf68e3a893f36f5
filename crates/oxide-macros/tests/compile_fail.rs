//! Each rule of `#[kernel]` has a file in `tests/ui` that breaks it, with the expected
//! compiler output checked in beside it (`TRYBUILD=overwrite cargo test` regenerates
//! them; review the diff). `pass_*.rs` files must compile and run.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    let mut files: Vec<_> = std::fs::read_dir("tests/ui")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    for file in files {
        let name = file.file_name().unwrap().to_str().unwrap();
        if name.starts_with("pass_") {
            t.pass(&file);
        } else {
            t.compile_fail(&file);
        }
    }
}
