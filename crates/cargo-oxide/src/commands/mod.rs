//! One file per subcommand; each returns an exit code from [`crate::exit`].

pub mod build;
pub mod clean;
pub mod doctor;
pub mod inspect;
pub mod key;
pub mod link;

use crate::cli::{Cli, Command};

pub fn dispatch(cli: Cli) -> i32 {
    match cli.command {
        Command::Build(args) => build::run(&args),
        Command::Doctor(args) => doctor::run(&args),
        Command::Inspect(args) => inspect::run(&args),
        Command::Clean(args) => clean::run(&args),
        Command::Key(args) => key::run(&args),
    }
}

/// Print an error the way cargo does, with the cause chain (less its exit-code mark).
pub fn report(err: &anyhow::Error) {
    // The exit-code mark is a context of its own; its text is not a cause.
    let mark = err
        .downcast_ref::<crate::exit::Code>()
        .map(|c| c.to_string());
    let mut chain = err
        .chain()
        .map(|c| c.to_string())
        .filter(|text| Some(text) != mark.as_ref());
    if let Some(first) = chain.next() {
        eprintln!("error: {first}");
    }
    for cause in chain {
        eprintln!("  caused by: {cause}");
    }
}

/// Report `err` and return its exit code.
pub fn fail(err: &anyhow::Error) -> i32 {
    report(err);
    crate::exit::code_of(err)
}
