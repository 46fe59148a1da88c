//! The speed baseline of `scripts/bench-compare`: read the same files the
//! same way (same discovery, same mmap/read, same line splitting, same
//! threads) and parse every line with simd-json's owned DOM, nothing else.
//! `ctxasm stats` does strictly more work (arena values, typing, trees,
//! counting), so its time over this one is the cost of our model.

use crate::input::discover::Discovery;
use crate::input::{lines, source};
use rayon::prelude::*;
use serde::Serialize;

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BaselineReport {
    pub files: u64,
    pub lines: u64,
    pub bad_lines: u64,
    pub bytes: u64,
}

fn parse_file(path: &std::path::Path, opts: &source::SourceOptions) -> BaselineReport {
    let mut r = BaselineReport { files: 1, ..BaselineReport::default() };
    let Ok(src) = source::load(path, opts) else {
        return r;
    };
    r.bytes = src.len() as u64;
    let mut buf: Vec<u8> = Vec::new();
    for line in lines::lines(&src) {
        r.lines += 1;
        buf.clear();
        buf.extend_from_slice(line.bytes);
        match simd_json::to_owned_value(&mut buf) {
            Ok(v) => {
                std::hint::black_box(&v);
            }
            Err(_) => r.bad_lines += 1,
        }
    }
    r
}

/// Parse every file of `disc` with the owned DOM on `threads` threads.
pub fn owned_dom(disc: &Discovery, threads: Option<usize>, opts: &source::SourceOptions) -> BaselineReport {
    let run = || {
        disc.files.par_iter().map(|f| parse_file(&f.path, opts)).reduce(BaselineReport::default, |a, b| {
            BaselineReport {
                files: a.files + b.files,
                lines: a.lines + b.lines,
                bad_lines: a.bad_lines + b.bad_lines,
                bytes: a.bytes + b.bytes,
            }
        })
    };
    match threads.map(|n| rayon::ThreadPoolBuilder::new().num_threads(n.max(1)).build()) {
        Some(Ok(pool)) => pool.install(run),
        _ => run(),
    }
}
