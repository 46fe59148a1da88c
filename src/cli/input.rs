//! The checks of a command's input written once: whether a path named on
//! the command line could not be read (exit 2, the report still printed),
//! and the bad lines of a send/batch input.

use ctxasm::diag::DiagKind;
use ctxasm::input::discover::Discovery;

/// Whether a given path does not exist or cannot be read.
pub fn failed(disc: &Discovery) -> bool {
    disc.diagnostics.iter().any(|d| matches!(d.kind, DiagKind::NotFound | DiagKind::Io))
}

/// Drop `output` (and its temporary name) from the files of `disc`: a run
/// never reads what it writes. The number of files dropped.
pub fn exclude_output(disc: &mut Discovery, output: &std::path::Path) -> usize {
    if output.as_os_str() == "-" {
        return 0;
    }
    let canon = |p: &std::path::Path| {
        let parent = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
        std::fs::canonicalize(parent).ok().map(|d| d.join(p.file_name().unwrap_or_default()))
    };
    let targets: Vec<std::path::PathBuf> =
        [output.to_path_buf(), crate::cli::output::temporary_name(output)].iter().filter_map(|p| canon(p)).collect();
    // A file is the output, or inside it (a dedup directory's recipes).
    let names: Vec<&std::ffi::OsStr> = targets.iter().filter_map(|t| t.file_name()).collect();
    let is_output = |f: &std::path::Path| {
        let near = f.file_name().is_some_and(|n| names.contains(&n))
            || f.ancestors().any(|a| a.file_name().is_some_and(|n| names.contains(&n)));
        near && canon(f).is_some_and(|p| targets.iter().any(|t| p.starts_with(t)))
    };
    let before = disc.files.len();
    let keep: Vec<bool> = disc.files.iter().map(|f| !is_output(&f.path)).collect();
    if keep.iter().all(|&k| k) {
        return 0;
    }
    // Renumber the groups' file indices over the files kept.
    let mut new_index = vec![None; keep.len()];
    let mut next = 0usize;
    for (i, &k) in keep.iter().enumerate() {
        if k {
            new_index[i] = Some(next);
            next += 1;
        }
    }
    let mut i = 0usize;
    disc.files.retain(|_| {
        i += 1;
        keep[i - 1]
    });
    for g in &mut disc.groups {
        g.main = g.main.and_then(|m| new_index[m]);
        g.subagents = g.subagents.iter().filter_map(|&s| new_index[s]).collect();
    }
    disc.groups.retain(|g| g.main.is_some() || !g.subagents.is_empty());
    before - disc.files.len()
}

/// Print every discovery diagnostic (stats lists them after its report).
pub fn print_discovery(disc: &Discovery) {
    for d in &disc.diagnostics {
        eprintln!("ctxasm: {d}");
    }
}

/// Read a send/batch input; bad lines are printed (at most 20). An input
/// without a single request is an error: every line bad (exit 2), or
/// nothing in it at all (exit 3).
#[cfg(feature = "net")]
pub fn read_requests(path: &std::path::Path) -> anyhow::Result<ctxasm::send::input::Input> {
    let input = ctxasm::send::input::read_input(path)?;
    print_bad_lines(&input.errors);
    if input.requests.is_empty() {
        let n = input.errors.len();
        if n == 0 {
            return Err(crate::cli::exit::NothingFound(format!("{}: no request in it", input.shown)).into());
        }
        anyhow::bail!(
            "{}: no request in it ({n} bad line{}); `ctxasm assemble` writes the lines `send` and `batch` read",
            input.shown,
            if n == 1 { "" } else { "s" }
        );
    }
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
