//! One handler per subcommand. Each resolves its settings, calls the
//! library, prints, and returns an [`Outcome`](super::exit::Outcome) or a
//! fatal error; none picks an exit number or exits.

pub mod assemble;
pub mod bench_baseline;
pub mod cost;
pub mod docs;
pub mod expand;
pub mod merge;
pub mod profile;
pub mod stats;
pub mod verify;

#[cfg(feature = "net")]
pub mod batch;
#[cfg(feature = "net")]
pub mod bench_send_baseline;
#[cfg(feature = "net")]
pub mod mock_mcp;
#[cfg(feature = "net")]
pub mod mock_server;
#[cfg(feature = "net")]
pub mod profile_capture;
#[cfg(feature = "net")]
pub mod send;
