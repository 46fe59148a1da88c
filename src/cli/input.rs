//! The checks of a command's input written once: whether a path named on
//! the command line could not be read (exit 2, the report still printed),
//! and the bad lines of a send/batch input.

use ctxasm::diag::DiagKind;
use ctxasm::input::discover::Discovery;

/// Whether a given path does not exist or cannot be read.
pub fn failed(disc: &Discovery) -> bool {
    disc.diagnostics.iter().any(|d| matches!(d.kind, DiagKind::NotFound | DiagKind::Io))
}

/// Print every discovery diagnostic (stats lists them after its report).
pub fn print_discovery(disc: &Discovery) {
    for d in &disc.diagnostics {
        eprintln!("ctxasm: {d}");
    }
}

/// Read a send/batch input; bad lines are printed (at most 20).
#[cfg(feature = "net")]
pub fn read_requests(path: &std::path::Path) -> anyhow::Result<ctxasm::send::input::Input> {
    let input = ctxasm::send::input::read_input(path)?;
    print_bad_lines(&input.errors);
    Ok(input)
}

/// At most 20 bad input lines, then their count.
#[cfg(feature = "net")]
pub fn print_bad_lines(errors: &[ctxasm::send::input::InputError]) {
    for e in errors.iter().take(20) {
        eprintln!("ctxasm: {e}");
    }
    if errors.len() > 20 {
        eprintln!("ctxasm: … {} more bad lines", errors.len() - 20);
    }
}
