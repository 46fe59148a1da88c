//! The profile cache: one profile file per Claude Code release in a
//! directory (`<cache>/profiles/<version>.json`, written by `ctxasm profile
//! capture`), and the choice of a profile for a transcript's `version`.
//!
//! The directory is given by the caller (the binary resolves the XDG cache
//! path); this module reads only that directory, never the environment.
//! A file that does not load is reported and skipped, not fatal: one
//! damaged cache entry must not stop a run over the others.

use super::{Profile, ProfileError};
use std::cmp::Ordering;
use std::fmt;
use std::path::{Path, PathBuf};

/// A Claude Code release number, `major.minor.patch` (a `-suffix` or
/// ` (Claude Code)` after it is ignored).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version(pub u32, pub u32, pub u32);

impl Version {
    /// `"2.1.88"`, `"2.0.77 (Claude Code)"` → a version; `None` for
    /// anything else.
    pub fn parse(s: &str) -> Option<Version> {
        let head = s.trim().split([' ', '-', '+']).next()?;
        let mut parts = head.split('.');
        let mut num = || parts.next().and_then(|p| p.parse::<u32>().ok());
        let v = Version(num()?, num()?, num()?);
        parts.next().is_none().then_some(v)
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

/// One cached profile.
#[derive(Debug)]
pub struct Shelved {
    pub version: Version,
    pub path: PathBuf,
    pub profile: Profile,
}

/// The cached profiles, oldest release first.
#[derive(Debug, Default)]
pub struct Shelf {
    pub dir: PathBuf,
    pub profiles: Vec<Shelved>,
}

/// Which cached profile a session gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// The profile of the session's own release.
    Exact(usize),
    /// No profile of the session's release: the nearest older one.
    Older(usize),
    /// Nothing older is cached (or the session records no version).
    Nothing,
}

impl Shelf {
    /// Every `*.json` profile in `dir` (a missing directory is an empty
    /// shelf), with the files that did not load. A profile's release is
    /// its `version` member, else its file name.
    pub fn open(dir: &Path) -> (Shelf, Vec<ProfileError>) {
        let mut shelf = Shelf { dir: dir.to_path_buf(), profiles: Vec::new() };
        let mut errors = Vec::new();
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (shelf, errors),
            Err(source) => {
                errors.push(ProfileError::Io { path: dir.to_path_buf(), source });
                return (shelf, errors);
            }
        };
        let mut paths: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        paths.sort();
        for path in paths {
            match Profile::from_file(&path) {
                Ok(profile) => {
                    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
                    match Version::parse(&profile.version).or_else(|| Version::parse(stem)) {
                        Some(version) => shelf.profiles.push(Shelved { version, path, profile }),
                        None => errors.push(ProfileError::NoVersion(path)),
                    }
                }
                Err(e) => errors.push(e),
            }
        }
        shelf.profiles.sort_by(|a, b| a.version.cmp(&b.version).then_with(|| a.path.cmp(&b.path)));
        shelf.profiles.dedup_by(|later, first| later.version == first.version);
        (shelf, errors)
    }

    /// Where `profile capture` writes the profile of `version`.
    pub fn path_for(dir: &Path, version: Version) -> PathBuf {
        dir.join(format!("{version}.json"))
    }
}

/// Which of `versions` (ascending) a session of release `version` gets.
pub fn choose(versions: &[Version], version: Option<Version>) -> Choice {
    let Some(v) = version else { return Choice::Nothing };
    let mut best = Choice::Nothing;
    for (i, have) in versions.iter().enumerate() {
        match have.cmp(&v) {
            Ordering::Equal => return Choice::Exact(i),
            Ordering::Less => best = Choice::Older(i),
            Ordering::Greater => break,
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_order() {
        assert_eq!(Version::parse("2.1.88"), Some(Version(2, 1, 88)));
        assert_eq!(Version::parse("2.0.77 (Claude Code)"), Some(Version(2, 0, 77)));
        assert_eq!(Version::parse("1.0.3-beta"), Some(Version(1, 0, 3)));
        assert_eq!(Version::parse("2.1"), None);
        assert_eq!(Version::parse("2.1.x"), None);
        assert_eq!(Version::parse("2.1.1.1"), None);
        assert!(Version(2, 1, 100) > Version(2, 1, 88));
        assert_eq!(Version(2, 1, 9).to_string(), "2.1.9");
    }

    fn shelf_of(versions: &[&str]) -> (tempfile::TempDir, Shelf) {
        let dir = tempfile::tempdir().unwrap();
        for v in versions {
            let mut p = Profile::builtin_cc_2_1_328().clone();
            p.version = v.to_string();
            std::fs::write(dir.path().join(format!("{v}.json")), p.to_json()).unwrap();
        }
        let (shelf, errors) = Shelf::open(dir.path());
        assert!(errors.is_empty(), "{errors:?}");
        (dir, shelf)
    }

    #[test]
    fn exact_then_nearest_older_then_nothing() {
        let (_d, shelf) = shelf_of(&["2.1.100", "2.0.77", "2.1.9"]);
        let order: Vec<String> = shelf.profiles.iter().map(|s| s.version.to_string()).collect();
        assert_eq!(order, ["2.0.77", "2.1.9", "2.1.100"]);
        let versions: Vec<Version> = shelf.profiles.iter().map(|s| s.version).collect();
        assert_eq!(choose(&versions, Version::parse("2.1.9")), Choice::Exact(1));
        assert_eq!(choose(&versions, Version::parse("2.1.50")), Choice::Older(1));
        assert_eq!(choose(&versions, Version::parse("2.1.332")), Choice::Older(2));
        assert_eq!(choose(&versions, Version::parse("1.0.128")), Choice::Nothing);
        assert_eq!(choose(&versions, None), Choice::Nothing);
    }

    #[test]
    fn a_damaged_file_is_reported_and_skipped_and_a_missing_dir_is_empty() {
        let (dir, _) = shelf_of(&["2.1.88"]);
        std::fs::write(dir.path().join("2.1.90.json"), "{ not json").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "ignored").unwrap();
        let (shelf, errors) = Shelf::open(dir.path());
        assert_eq!(shelf.profiles.len(), 1);
        assert_eq!(errors.len(), 1);
        assert!(errors[0].to_string().contains("2.1.90.json"), "{}", errors[0]);
        let (empty, errors) = Shelf::open(&dir.path().join("absent"));
        assert!(empty.profiles.is_empty() && errors.is_empty());
    }
}
