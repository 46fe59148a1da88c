//! `--profile auto`: each session gets the cached profile of the Claude
//! Code release its transcript records, per session (a corpus mixes
//! releases). Without one, the nearest older cached profile, else the
//! built-in layout, and an `approximated_profile` diagnostic that names the
//! `ctxasm profile capture` command that would make the session exact.

use super::pipeline::{Extras, Plan, Setup};
use crate::corpus::Session;
use crate::diag::DiagKind;
use crate::profile::shelf::choose;
use crate::profile::{Choice, Shelf, Version};
use std::path::PathBuf;

/// The cached profiles made ready to assemble with, and the fallback.
#[derive(Debug)]
pub struct Chooser {
    /// The cached releases, ascending, and their setups in that order.
    versions: Vec<Version>,
    setups: Vec<Setup>,
    /// The cache directory, for the diagnostics.
    dir: PathBuf,
    fallback: Setup,
}

impl Chooser {
    /// `template` gives the environment and what-ifs every session shares
    /// and is the fallback (its profile is the built-in layout).
    pub fn new(shelf: Shelf, template: Setup) -> Chooser {
        let versions = shelf.profiles.iter().map(|s| s.version).collect();
        let setups = shelf
            .profiles
            .into_iter()
            .map(|s| Setup { profile: s.profile, env: template.env.clone(), overrides: template.overrides.clone() })
            .collect();
        Chooser { versions, setups, dir: shelf.dir, fallback: template }
    }

    /// True when nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.setups.is_empty()
    }

    /// The plan of `session` with its release's profile.
    pub fn prepare(&self, session: &Session<'_, '_>) -> (Plan, Extras) {
        let recorded = session_version(session);
        let version = recorded.and_then(Version::parse);
        let (setup, note) = match choose(&self.versions, version) {
            Choice::Exact(i) => (&self.setups[i], None),
            Choice::Older(i) => {
                let older = self.versions[i];
                let v = version.map(|v| v.to_string()).unwrap_or_default();
                let note = format!(
                    "Claude Code {v}: no cached profile of this release; built with {older}'s (the nearest older \
                     cached, {}); `ctxasm profile capture {v}` makes it exact",
                    self.dir.display()
                );
                (&self.setups[i], Some(note))
            }
            Choice::Nothing => {
                let note = (!session.has_shapes()).then(|| match (recorded, version) {
                    (_, Some(v)) => format!(
                        "Claude Code {v}: no cached profile of this release or an older one in {}; built with the \
                         built-in {} layout, which holds no prompt text or tools; `ctxasm profile capture {v}` \
                         makes it exact",
                        self.dir.display(),
                        self.fallback.profile.name
                    ),
                    (Some(r), None) => format!(
                        "the transcript's version {r:?} is not a release number; built with the built-in {} layout",
                        self.fallback.profile.name
                    ),
                    (None, None) => format!(
                        "the transcript records no Claude Code version; built with the built-in {} layout; give \
                         --profile to choose one",
                        self.fallback.profile.name
                    ),
                });
                (&self.fallback, note)
            }
        };
        let (plan, mut extras) = setup.prepare(session);
        if let Some(note) = note {
            extras.warnings.insert(0, (DiagKind::ApproximatedProfile, note));
        }
        (plan, extras)
    }
}

/// The Claude Code release a session's transcript records: the `version`
/// of its first entry that has one.
pub fn session_version<'a>(session: &Session<'a, '_>) -> Option<&'a str> {
    session.files().flat_map(|f| f.parsed.entries.iter()).find_map(|e| e.env.shared.version)
}
