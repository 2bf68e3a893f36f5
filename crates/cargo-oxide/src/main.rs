//! `cargo oxide`: build Rust kernels to PTX with stock rustc. Thin: the link step is
//! chosen when rustc runs this binary as the nvptx linker; everything else is a
//! subcommand in `commands/`.

mod cli;
mod commands;
mod emulator;
mod env;
mod exit;
mod fsutil;
mod ir;
mod project;
mod ptx;
mod sysroot;
mod toolchain;

fn main() {
    let code = if commands::link::invoked_as_linker() {
        commands::link::run_as_linker()
    } else {
        commands::dispatch(cli::parse())
    };
    std::process::exit(code);
}
