//! The one exit-status policy of the binary: what each outcome exits with,
//! how a fatal error is printed, and that a closed stdout (`| head`) is not
//! a failure. Commands return an [`Outcome`] or an error; nothing else in
//! the binary picks a number.

use std::process::ExitCode;

/// How a command ended. The numbers are the documented exit statuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    /// Everything asked for was done.
    Clean = 0,
    /// Done, but something was wrong with the data: a diagnostic under
    /// `--strict`, a mismatch, a failed request or batch.
    Problems = 1,
    /// Bad usage, unreadable input, output that cannot be written. Errors
    /// returned from a command exit with this.
    Fatal = 2,
    /// The input held nothing to work on: no transcript under the paths
    /// (or the default projects roots), or transcripts without a request
    /// ([`NothingFound`]).
    NothingFound = 3,
    /// Stopped by SIGINT (128 + 2).
    Interrupted = 130,
    /// Stopped by SIGTERM (128 + 15).
    Terminated = 143,
}

impl Outcome {
    /// The outcome of a status the library computed (`send::exit_status`)
    /// or a signal watcher stored; an unknown number is fatal.
    pub fn from_status(status: u8) -> Self {
        match status {
            0 => Self::Clean,
            1 => Self::Problems,
            3 => Self::NothingFound,
            130 => Self::Interrupted,
            143 => Self::Terminated,
            _ => Self::Fatal,
        }
    }

    /// `Fatal` when `failed`, else `self`: input that was missing or had
    /// bad lines overrides what the rest of the run found.
    pub fn unless_failed(self, failed: bool) -> Self {
        if failed { Self::Fatal } else { self }
    }
}

impl From<Outcome> for ExitCode {
    fn from(o: Outcome) -> Self {
        ExitCode::from(o as u8)
    }
}

/// An error that is a finding, not a failure of the run (a batch call that
/// failed, a capture without a profile): printed, status 1.
pub fn problem(e: impl std::fmt::Display) -> Outcome {
    eprintln!("ctxasm: {e}");
    Outcome::Problems
}

/// The error of a command that found nothing to work on: printed as the
/// others, status 3 ([`Outcome::NothingFound`]).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NothingFound(pub String);

/// The exit status of a command's result, printing a fatal error as
/// `ctxasm: {message}` on stderr. A broken pipe anywhere in the error's
/// chain exits 0 silently: the reader has all it wanted (ripgrep does the
/// same).
pub fn exit_code(result: anyhow::Result<Outcome>) -> ExitCode {
    match result {
        Ok(outcome) => outcome.into(),
        Err(e) if is_broken_pipe(&e) => Outcome::Clean.into(),
        Err(e) if e.downcast_ref::<NothingFound>().is_some() => {
            eprintln!("ctxasm: {}", render(&e));
            Outcome::NothingFound.into()
        }
        Err(e) => {
            eprintln!("ctxasm: {}", render(&e));
            Outcome::Fatal.into()
        }
    }
}

/// Whether any error of the chain is an I/O error of kind `BrokenPipe`.
pub fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}

/// The error chain as `outer: inner: …` (anyhow's `{:#}`), except that a
/// cause whose text the message already holds is not repeated: the
/// library's thiserror types print their `source` in their own message.
pub fn render(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.is_empty() {
            out = text;
        } else if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn outcomes_exit_with_the_documented_statuses() {
        let all = [
            Outcome::Clean,
            Outcome::Problems,
            Outcome::Fatal,
            Outcome::NothingFound,
            Outcome::Interrupted,
            Outcome::Terminated,
        ];
        let codes: Vec<u8> = all.iter().map(|&o| o as u8).collect();
        assert_eq!(codes, [0, 1, 2, 3, 130, 143]);
        assert_eq!(exit_code(Err(NothingFound("none".into()).into())), ExitCode::from(3));
        for o in all {
            assert_eq!(Outcome::from_status(o as u8), o);
        }
        assert_eq!(Outcome::from_status(7), Outcome::Fatal);
        assert_eq!(Outcome::Problems.unless_failed(true), Outcome::Fatal);
        assert_eq!(Outcome::Problems.unless_failed(false), Outcome::Problems);
    }

    #[test]
    fn errors_exit_2_and_a_broken_pipe_exits_0() {
        let pipe = anyhow::Error::new(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        assert!(is_broken_pipe(&pipe));
        let wrapped: anyhow::Result<()> =
            Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe)).context("cannot write output");
        let wrapped = wrapped.err().map(|e| is_broken_pipe(&e));
        assert_eq!(wrapped, Some(true));
        assert!(!is_broken_pipe(&anyhow::anyhow!("no such file")));
        assert_eq!(exit_code(Err(pipe)), ExitCode::from(0));
        assert_eq!(exit_code(Err(anyhow::anyhow!("bad flag"))), ExitCode::from(2));
        assert_eq!(exit_code(Ok(Outcome::Terminated)), ExitCode::from(143));
    }

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        #[derive(Debug, thiserror::Error)]
        #[error("cannot read x: {source}")]
        struct Read {
            source: std::io::Error,
        }
        let e = anyhow::Error::new(Read { source: std::io::Error::other("denied") });
        assert_eq!(render(&e), "cannot read x: denied");
        let e = e.context("mock-server");
        assert_eq!(render(&e), "mock-server: cannot read x: denied");
    }
}
