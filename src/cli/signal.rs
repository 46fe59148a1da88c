//! The one signal helper: Ctrl-C everywhere, SIGTERM too under unix. Used
//! by mock-server (stop) and by send/batch (the first signal drains, the
//! second aborts). Must be created inside a tokio runtime; it never exits
//! the process itself.

use super::exit::Outcome;
use std::io;

/// Which signal arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    Interrupt,
    Terminate,
}

impl Signal {
    /// The exit status of a run stopped by this signal (130 / 143).
    pub fn outcome(self) -> Outcome {
        match self {
            Self::Interrupt => Outcome::Interrupted,
            Self::Terminate => Outcome::Terminated,
        }
    }
}

/// Listeners installed once: a signal that arrives between two `recv`
/// calls is kept, not lost (a fresh `ctrl_c()` per wait could miss it).
pub struct Signals {
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
}

impl Signals {
    pub fn new() -> io::Result<Self> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Self { int: signal(SignalKind::interrupt())?, term: signal(SignalKind::terminate())? })
        }
        #[cfg(not(unix))]
        {
            Ok(Self {})
        }
    }

    /// The next signal.
    pub async fn recv(&mut self) -> io::Result<Signal> {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.int.recv() => Ok(Signal::Interrupt),
                _ = self.term.recv() => Ok(Signal::Terminate),
            }
        }
        #[cfg(not(unix))]
        {
            tokio::signal::ctrl_c().await.map(|()| Signal::Interrupt)
        }
    }
}

/// The drain-then-abort watcher of send and batch: the first signal stops
/// new requests and records its exit status in `status`, any later one
/// aborts those in flight.
pub fn watch_stop(
    tx: tokio::sync::watch::Sender<ctxasm::send::dispatch::Stop>,
    status: std::sync::Arc<std::sync::atomic::AtomicU8>,
) {
    use ctxasm::send::dispatch::Stop;
    use std::sync::atomic::Ordering;
    tokio::spawn(async move {
        let Ok(mut signals) = Signals::new() else {
            eprintln!("ctxasm: cannot watch for signals");
            return;
        };
        while let Ok(signal) = signals.recv().await {
            if status.load(Ordering::Relaxed) == 0 {
                status.store(signal.outcome() as u8, Ordering::Relaxed);
                eprintln!("ctxasm: stopping: no new requests; waiting for those in flight (Ctrl-C again aborts them)");
                let _ = tx.send(Stop::Drain);
            } else {
                eprintln!("ctxasm: aborting the requests in flight (they are sent again by the next run)");
                let _ = tx.send(Stop::Abort);
            }
        }
    });
}
