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

/// Print an error the way cargo does, with the cause chain.
pub fn report(err: &anyhow::Error) {
    eprintln!("error: {err}");
    for cause in err.chain().skip(1) {
        eprintln!("  caused by: {cause}");
    }
}
