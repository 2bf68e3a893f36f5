//! One file per subcommand; each returns an exit code from [`crate::exit`].

pub mod build;
pub mod clean;
pub mod doctor;
pub mod inspect;
pub mod link;

use crate::cli::{Cli, Command};

pub fn dispatch(cli: Cli) -> i32 {
    match cli.command {
        Command::Build(args) => build::run(&args),
        Command::Doctor(args) => doctor::run(&args),
        Command::Inspect(args) => inspect::run(&args),
        Command::Clean(args) => clean::run(&args),
    }
}

/// Print an error the way cargo does, with the cause chain (less its exit-code mark).
pub fn report(err: &anyhow::Error) {
    let mut chain = err.chain().filter(|c| !c.is::<crate::exit::Code>());
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
