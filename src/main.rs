//! The `ctxasm` command line: a thin layer over the library.

use clap::{Args, Parser, Subcommand};
use ctxasm::diag::DiagKind;
use ctxasm::input::ReadOptions;
use ctxasm::input::discover::{Discovery, default_roots, discover};
use ctxasm::input::source::SourceOptions;
use ctxasm::model::session::RunOptions;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(
    name = "ctxasm",
    version,
    about = "Rebuild the Anthropic API requests of Claude Code sessions from their transcripts"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Count files, lines, entries and messages, and list every defect found.
    Stats(StatsArgs),
    /// Speed baseline for scripts/bench-compare: parse every line with
    /// simd-json's owned DOM and nothing else.
    #[command(hide = true)]
    BenchBaseline(InputArgs),
}

#[derive(Args)]
struct InputArgs {
    /// Transcript files, session directories or projects roots
    /// [default: $CLAUDE_CONFIG_DIR/projects or ~/.claude/projects].
    paths: Vec<PathBuf>,
    /// Worker threads [default: all cores].
    #[arg(long)]
    threads: Option<usize>,
    /// Files modified less than this many seconds ago are read, not mapped.
    #[arg(long, default_value_t = 10)]
    live_window: u64,
    /// Never memory-map; read every file.
    #[arg(long)]
    no_mmap: bool,
    /// Skip lines longer than this many bytes (with a diagnostic).
    #[arg(long, default_value_t = 1 << 30)]
    max_line_bytes: usize,
}

impl InputArgs {
    fn source(&self) -> SourceOptions {
        SourceOptions { live_window: Duration::from_secs(self.live_window), no_mmap: self.no_mmap }
    }

    fn discover(&self) -> Discovery {
        let paths = if self.paths.is_empty() { default_roots() } else { self.paths.clone() };
        discover(&paths)
    }
}

#[derive(Args)]
struct StatsArgs {
    #[command(flatten)]
    input: InputArgs,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
    /// Exit with status 1 when there is any diagnostic.
    #[arg(long)]
    strict: bool,
    /// Diagnostics shown in the table (all are in --json).
    #[arg(long, default_value_t = 20)]
    show: usize,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Stats(args) => stats(&args),
        Command::BenchBaseline(args) => {
            let disc = args.discover();
            let report = ctxasm::baseline::owned_dom(&disc, args.threads, &args.source());
            print_json(&report)
        }
    }
}

fn print_json<T: serde::Serialize>(value: &T) -> ExitCode {
    let mut out = std::io::stdout().lock();
    let written = serde_json::to_writer(&mut out, value).map_err(std::io::Error::other).and_then(|()| writeln!(out));
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ctxasm: cannot write output: {e}");
            ExitCode::from(2)
        }
    }
}

/// A progress bar on stderr for long runs on a terminal.
fn progress_bar(disc: &Discovery) -> Option<indicatif::ProgressBar> {
    let long = disc.files.len() >= 500 || disc.total_bytes() >= 256 << 20;
    if !long || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(disc.total_bytes());
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{spinner} reading {bytes}/{total_bytes} [{wide_bar}] {bytes_per_sec} eta {eta}",
    ) {
        bar.set_style(style);
    }
    Some(bar)
}

fn stats(args: &StatsArgs) -> ExitCode {
    let start = Instant::now();
    let disc = args.input.discover();
    let bar = progress_bar(&disc);
    let tick = |bytes: u64| {
        if let Some(b) = &bar {
            b.inc(bytes);
        }
    };
    let opts = RunOptions {
        read: ReadOptions { source: args.input.source(), max_line_bytes: args.input.max_line_bytes },
        threads: args.input.threads,
        progress: Some(&tick),
    };
    let st = ctxasm::stats::collect(&disc, &opts);
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let code = if args.json {
        print_json(&st)
    } else {
        let table = ctxasm::stats::render_table(&st, start.elapsed().as_secs_f64(), args.show);
        match std::io::stdout().lock().write_all(table.as_bytes()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ctxasm: cannot write output: {e}");
                ExitCode::from(2)
            }
        }
    };
    if code != ExitCode::SUCCESS {
        return code;
    }
    let missing = disc.diagnostics.iter().any(|d| matches!(d.kind, DiagKind::NotFound | DiagKind::Io));
    if missing {
        for d in &disc.diagnostics {
            eprintln!("ctxasm: {d}");
        }
        return ExitCode::from(2);
    }
    if args.strict && !st.diagnostics.is_empty() {
        eprintln!("ctxasm: {} diagnostic(s) and --strict", st.diagnostics.len());
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
