//! Where pass 1 leaves the corpus's chains: each encoded once into a
//! compact byte form, in an unnamed temporary file, and read back one
//! chain at a time by the passes after it (the replay holds only the
//! chains whose requests are under way at its point in time), so the
//! modeled cost's memory follows the corpus's busiest hour, not its size.
//! Held as [`ChainIn`]s, a chain took 44 B per block and 192 B per request:
//! 35 MB for a 2 GB corpus, most of the peak. Encoded, a block is about
//! 24 B (its 16-byte hash, tokens, place and size features) and a request
//! about 50 B (most of it its recorded usage and response key).
//!
//! Without a temporary file (no writable temporary directory, or a write
//! that failed), the encoded chains stay in memory: the run goes on, with
//! more memory.

use super::blocks::{ChainIn, ReqId, ReqIn};
use crate::cost::sim::{BlockFeat, BlockKind, ChainStep, Place, Role, SimBlock, Ttl};
use crate::cost::tokens::TokenCounts;
use std::io::{self, Write};
use std::sync::Arc;

/// Every chain of the corpus, in pass 1's order.
pub(super) struct ChainStore {
    file: Option<std::fs::File>,
    /// Chains still go to `file` (no write to it failed).
    writable: bool,
    /// Bytes written to `file`.
    file_len: u64,
    /// Chains' bytes bound for `file`, written [`WRITE_AT`] at a time
    /// (their slots already say where they will be).
    pending: Vec<u8>,
    /// Encoded chains kept in memory (no file, or after one failed).
    memory: Vec<u8>,
    slots: Vec<Slot>,
}

#[derive(Clone, Copy)]
struct Slot {
    at: Where,
    offset: u64,
    len: u32,
    /// Its requests, known without reading it.
    reqs: u32,
}

#[derive(Clone, Copy, PartialEq)]
enum Where {
    File,
    Memory,
}

impl ChainStore {
    /// An empty store in an unnamed file of the system's temporary
    /// directory (in memory when there is none).
    pub(super) fn new() -> ChainStore {
        ChainStore::in_file(tempfile::tempfile().ok())
    }

    fn in_file(file: Option<std::fs::File>) -> ChainStore {
        ChainStore { file, writable: true, file_len: 0, pending: Vec::new(), memory: Vec::new(), slots: Vec::new() }
    }

    /// A store of `chains` (tests).
    #[cfg(test)]
    pub(super) fn of(chains: &[ChainIn]) -> ChainStore {
        let mut store = ChainStore::new();
        let mut buf = Vec::new();
        for c in chains {
            store.push(c, &mut buf);
        }
        store.finish();
        store
    }

    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    /// How many requests chain `ci` has.
    pub(super) fn reqs(&self, ci: usize) -> usize {
        self.slots.get(ci).map_or(0, |s| s.reqs as usize)
    }

    /// Add `c` as the next chain ([`ChainStore::finish`] before reading).
    pub(super) fn push(&mut self, c: &ChainIn, buf: &mut Vec<u8>) {
        buf.clear();
        encode(c, buf);
        self.add(buf, c.reqs.len());
    }

    /// Store `bytes`, a chain of `reqs` requests, as the next chain.
    fn add(&mut self, bytes: &[u8], reqs: usize) {
        let len = bytes.len() as u32;
        let slot = if self.file.is_some() && self.writable {
            let offset = self.file_len + self.pending.len() as u64;
            self.pending.extend_from_slice(bytes);
            Slot { at: Where::File, offset, len, reqs: reqs as u32 }
        } else {
            let offset = self.memory.len() as u64;
            self.memory.extend_from_slice(bytes);
            Slot { at: Where::Memory, offset, len, reqs: reqs as u32 }
        };
        self.slots.push(slot);
        if self.pending.len() >= WRITE_AT {
            self.write_pending();
        }
    }

    /// Write the pending bytes to the file. When that fails (the file's end
    /// is then unknown), they and every chain after them stay in memory;
    /// the chains before are read where they are.
    fn write_pending(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let written = self.file.as_mut().is_some_and(|f| f.write_all(&self.pending).is_ok());
        if written {
            self.file_len += self.pending.len() as u64;
        } else {
            self.writable = false;
            let base = self.memory.len() as u64;
            self.memory.extend_from_slice(&self.pending);
            for s in self.slots.iter_mut().rev().take_while(|s| s.at == Where::File && s.offset >= self.file_len) {
                *s = Slot { at: Where::Memory, offset: base + (s.offset - self.file_len), ..*s };
            }
        }
        self.pending.clear();
    }

    /// Every chain added is readable.
    pub(super) fn finish(&mut self) {
        self.write_pending();
        self.pending = Vec::new();
    }

    /// Chain `ci`, decoded.
    pub(super) fn load(&self, ci: usize) -> io::Result<ChainIn> {
        let mut buf = Vec::new();
        self.load_with(ci, &mut buf)
    }

    /// [`ChainStore::load`] reading through `buf`.
    pub(super) fn load_with(&self, ci: usize, buf: &mut Vec<u8>) -> io::Result<ChainIn> {
        let slot = *self.slots.get(ci).ok_or_else(|| broken(ci, "no such chain"))?;
        let bytes: &[u8] = match slot.at {
            Where::Memory => self
                .memory
                .get(slot.offset as usize..slot.offset as usize + slot.len as usize)
                .ok_or_else(|| broken(ci, "past the end"))?,
            Where::File => {
                let f = self.file_for(ci)?;
                if slot.offset + u64::from(slot.len) > self.file_len {
                    return Err(broken(ci, "not written yet"));
                }
                buf.resize(slot.len as usize, 0);
                read_at(f, buf, slot.offset)?;
                buf
            }
        };
        decode_chain(ci, bytes)
    }

    /// Chains `range`, `f` on each (decoded in parallel), in order. Chains
    /// that lie one after the other in the file are read in one go.
    fn decode_range<R: Send>(
        &self,
        range: std::ops::Range<usize>,
        f: impl Fn(usize, ChainIn) -> R + Sync,
    ) -> io::Result<Vec<io::Result<R>>> {
        use rayon::prelude::*;
        let mut run = Vec::new();
        let base = self.read_run(range.clone(), &mut run)?;
        Ok(range
            .into_par_iter()
            .map(|ci| {
                let slot = self.slots[ci];
                let c = match base {
                    Some(base) => {
                        let at = (slot.offset - base) as usize;
                        let bytes = run.get(at..at + slot.len as usize).ok_or_else(|| broken(ci, "past the end"))?;
                        decode_chain(ci, bytes)?
                    }
                    None => self.load(ci)?,
                };
                Ok(f(ci, c))
            })
            .collect())
    }

    /// The bytes of chains `range` into `buf` with one read, when all are
    /// in the file one after the other: where they start.
    fn read_run(&self, range: std::ops::Range<usize>, buf: &mut Vec<u8>) -> io::Result<Option<u64>> {
        let slots = self.slots.get(range.clone()).unwrap_or_default();
        let (Some(first), Some(last)) = (slots.first(), slots.last()) else { return Ok(None) };
        let one_run = slots.iter().all(|s| s.at == Where::File)
            && slots.windows(2).all(|w| w[1].offset == w[0].offset + u64::from(w[0].len));
        if !one_run {
            return Ok(None);
        }
        if last.offset + u64::from(last.len) > self.file_len {
            return Err(broken(range.start, "not written yet"));
        }
        let len = (last.offset + u64::from(last.len) - first.offset) as usize;
        buf.resize(len, 0);
        read_at(self.file_for(range.start)?, buf, first.offset)?;
        Ok(Some(first.offset))
    }

    fn file_for(&self, ci: usize) -> io::Result<&std::fs::File> {
        self.file.as_ref().ok_or_else(|| broken(ci, "its temporary file is gone"))
    }

    /// `f` on every chain (decoded in parallel, a bounded number at a
    /// time): what it returned, in chain order.
    #[cfg(test)]
    pub(super) fn map<R: Send>(&self, f: impl Fn(usize, &ChainIn) -> R + Sync) -> io::Result<Vec<R>> {
        let mut out = Vec::with_capacity(self.len());
        self.map_into(f, |_, r| out.push(r))?;
        Ok(out)
    }

    /// [`ChainStore::map`], each result handed to `sink` in chain order as
    /// its chain's turn comes, not held.
    pub(super) fn map_into<R: Send>(
        &self,
        f: impl Fn(usize, &ChainIn) -> R + Sync,
        mut sink: impl FnMut(usize, R),
    ) -> io::Result<()> {
        for range in self.ranges(AT_ONCE) {
            for (ci, d) in range.clone().zip(self.decode_range(range, |ci, c| f(ci, &c))?) {
                sink(ci, d?);
            }
        }
        Ok(())
    }

    /// The chains' indices, `n` at a time.
    fn ranges(&self, n: usize) -> impl Iterator<Item = std::ops::Range<usize>> + use<> {
        let len = self.len();
        (0..len).step_by(n).map(move |start| start..(start + n).min(len))
    }

    /// Every chain in order (decoded in parallel, a bounded number ahead).
    pub(super) fn each(&self) -> impl Iterator<Item = io::Result<(usize, ChainIn)>> + '_ {
        let mut ahead = std::collections::VecDeque::new();
        let mut next = 0;
        std::iter::from_fn(move || {
            if ahead.is_empty() && next < self.len() {
                let end = (next + EACH_AHEAD).min(self.len());
                match self.decode_range(next..end, |_, c| c) {
                    Ok(decoded) => ahead.extend((next..end).zip(decoded)),
                    Err(e) => ahead.push_back((next, Err(e))),
                }
                next = end;
            }
            let (ci, c) = ahead.pop_front()?;
            Some(c.map(|c| (ci, c)))
        })
    }

    /// `f` on every chain (in parallel, a bounded number at a time), each
    /// stored again as `f` left it, in a new file (the old one goes: the
    /// disk holds the chains once); what `f` returned handed to `sink` in
    /// chain order.
    pub(super) fn update<R: Send>(
        &mut self,
        f: impl Fn(&mut ChainIn) -> R + Sync,
        mut sink: impl FnMut(usize, R),
    ) -> io::Result<()> {
        let mut next = ChainStore::new();
        for range in self.ranges(AT_ONCE) {
            let done = self.decode_range(range.clone(), |_, mut c| {
                let r = f(&mut c);
                let mut bytes = Vec::new();
                encode(&c, &mut bytes);
                (bytes, r)
            })?;
            for (ci, d) in range.zip(done) {
                let (bytes, r) = d?;
                next.add(&bytes, self.reqs(ci));
                sink(ci, r);
            }
        }
        next.finish();
        *self = next;
        Ok(())
    }

    /// Bytes the chains take in the file and in memory.
    #[cfg(test)]
    fn sizes(&self) -> (u64, usize) {
        (self.file_len, self.memory.len())
    }
}

/// Bytes gathered before they are written to the file.
const WRITE_AT: usize = 256 << 10;

/// Chains decoded at a time by [`ChainStore::map`] and
/// [`ChainStore::update`].
const AT_ONCE: usize = 256;

/// Chains [`ChainStore::each`] decodes ahead of the one it gives.
const EACH_AHEAD: usize = 32;

fn broken(ci: usize, what: &str) -> io::Error {
    io::Error::other(format!("the modeled cost's store of chains: chain {ci}: {what}"))
}

#[cfg(unix)]
fn read_at(f: &std::fs::File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(f, buf, offset)
}

#[cfg(not(unix))]
fn read_at(f: &std::fs::File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        let n = std::os::windows::fs::FileExt::seek_read(f, &mut buf[done..], offset + done as u64)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        done += n;
    }
    Ok(())
}

fn put_u(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

struct Reader<'b> {
    b: &'b [u8],
    at: usize,
}

impl<'b> Reader<'b> {
    fn u(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self.b.get(self.at)?;
            self.at += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Some(v);
            }
        }
        None
    }

    fn usize(&mut self) -> Option<usize> {
        usize::try_from(self.u()?).ok()
    }

    fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.u()?).ok()
    }

    fn byte(&mut self) -> Option<u8> {
        let b = *self.b.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn bytes(&mut self, n: usize) -> Option<&'b [u8]> {
        let s = self.b.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(s)
    }

    fn str(&mut self) -> Option<&'b str> {
        let n = self.usize()?;
        std::str::from_utf8(self.bytes(n)?).ok()
    }

    fn fixed<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.bytes(N)?.try_into().ok()
    }
}

fn ttl_code(t: Option<Ttl>) -> u8 {
    match t {
        None => 0,
        Some(Ttl::FiveMinutes) => 1,
        Some(Ttl::OneHour) => 2,
    }
}

fn ttl_of(code: u8) -> Option<Option<Ttl>> {
    match code {
        0 => Some(None),
        1 => Some(Some(Ttl::FiveMinutes)),
        2 => Some(Some(Ttl::OneHour)),
        _ => None,
    }
}

const KINDS: [BlockKind; 6] =
    [BlockKind::Text, BlockKind::ToolUse, BlockKind::ToolResult, BlockKind::Image, BlockKind::System, BlockKind::Tool];
const ROLES: [Role; 4] = [Role::User, Role::Assistant, Role::System, Role::Other];

/// The block's flags: TTL (2 bits), kind (3), pinned, dropped.
fn block_flags(b: &SimBlock) -> u8 {
    let kind = KINDS.iter().position(|&k| k == b.kind).unwrap_or(0) as u8;
    ttl_code(b.ttl) | kind << 2 | u8::from(b.pinned) << 5 | u8::from(b.dropped) << 6
}

/// Its place: tool 0, system 1, a message 2 + 2 × role + first.
fn place_code(p: Place) -> u8 {
    match p {
        Place::Tool => 0,
        Place::System => 1,
        Place::Message { role, first } => {
            2 + 2 * ROLES.iter().position(|&r| r == role).unwrap_or(3) as u8 + u8::from(first)
        }
    }
}

fn place_of(code: u8) -> Option<Place> {
    Some(match code {
        0 => Place::Tool,
        1 => Place::System,
        c => Place::Message { role: *ROLES.get(usize::from((c - 2) / 2))?, first: (c - 2) % 2 == 1 },
    })
}

fn encode(c: &ChainIn, out: &mut Vec<u8>) {
    put_u(out, c.session as u64);
    put_str(out, &c.id_prefix);
    put_u(out, c.unseen.map_or(0, |u| u as u64 + 1));
    put_u(out, c.unseen_again.len() as u64);
    for &u in &c.unseen_again {
        put_u(out, u as u64);
    }
    out.push(u8::from(c.excerpt));
    put_u(out, c.arena.len() as u64);
    for b in &c.arena {
        out.extend_from_slice(&b.hash.to_le_bytes());
        put_u(out, u64::from(b.tokens));
        out.push(block_flags(b));
        out.push(place_code(b.place));
    }
    put_u(out, c.feats.len() as u64);
    for f in &c.feats {
        put_u(out, u64::from(f.bytes));
        put_u(out, u64::from(f.image_tokens));
        out.push(u8::from(f.thinking));
    }
    // Models once each, in first use order; requests name them by index.
    let mut models: Vec<&Arc<str>> = Vec::new();
    for r in &c.reqs {
        if !models.iter().any(|m| ***m == *r.model) {
            models.push(&r.model);
        }
    }
    put_u(out, models.len() as u64);
    for m in &models {
        put_str(out, m);
    }
    put_u(out, c.reqs.len() as u64);
    let mut at = 0;
    for r in &c.reqs {
        match &r.id {
            ReqId::Index(n) => {
                out.push(0);
                put_u(out, u64::from(*n));
            }
            ReqId::Full(s) => {
                out.push(1);
                put_str(out, s);
            }
        }
        // Times as zigzag differences from the request before.
        put_u(out, zigzag(r.at_ms.wrapping_sub(at) as i64));
        at = r.at_ms;
        put_u(out, zigzag(r.ready_ms.wrapping_sub(r.at_ms) as i64));
        put_u(out, models.iter().position(|m| ***m == *r.model).unwrap_or(0) as u64);
        match r.recorded {
            None => out.push(0),
            Some(t) => {
                out.push(1);
                for v in [t.input, t.cache_write_5m, t.cache_write_1h, t.cache_read, t.output] {
                    put_u(out, v);
                }
            }
        }
        match r.usage_key {
            None => out.push(0),
            Some(k) => {
                out.push(1);
                out.extend_from_slice(&k.to_le_bytes());
            }
        }
        put_u(out, r.step.keep as u64);
        put_u(out, r.step.added.start as u64);
        put_u(out, r.step.added.end as u64);
        put_u(out, r.step.breakpoints.len() as u64);
        for &(p, t) in &r.step.breakpoints {
            put_u(out, u64::from(p));
            out.push(ttl_code(Some(t)));
        }
        put_u(out, r.len as u64);
        // Mostly 0 (no thinking config known): one byte.
        put_u(out, r.thinking);
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Chain `ci` from its bytes.
fn decode_chain(ci: usize, bytes: &[u8]) -> io::Result<ChainIn> {
    decode(&mut Reader { b: bytes, at: 0 }).ok_or_else(|| broken(ci, "cannot decode its bytes"))
}

fn decode(r: &mut Reader<'_>) -> Option<ChainIn> {
    let session = r.usize()?;
    let id_prefix: Box<str> = r.str()?.into();
    let unseen = r.usize()?.checked_sub(1);
    let n = r.usize()?;
    let unseen_again = (0..n).map(|_| r.usize()).collect::<Option<Vec<_>>>()?;
    let excerpt = r.byte()? != 0;
    let n = r.usize()?;
    let mut arena = Vec::with_capacity(n);
    for _ in 0..n {
        let hash = u128::from_le_bytes(r.fixed()?);
        let tokens = r.u32()?;
        let flags = r.byte()?;
        let place = place_of(r.byte()?)?;
        arena.push(SimBlock {
            hash,
            tokens,
            ttl: ttl_of(flags & 3)?,
            kind: *KINDS.get(usize::from(flags >> 2 & 7))?,
            place,
            pinned: flags >> 5 & 1 == 1,
            dropped: flags >> 6 & 1 == 1,
        });
    }
    let n = r.usize()?;
    let mut feats = Vec::with_capacity(n);
    for _ in 0..n {
        feats.push(BlockFeat { bytes: r.u32()?, image_tokens: r.u32()?, thinking: r.byte()? != 0 });
    }
    let n = r.usize()?;
    let models = (0..n).map(|_| r.str().map(Arc::<str>::from)).collect::<Option<Vec<_>>>()?;
    let n = r.usize()?;
    let mut reqs = Vec::with_capacity(n);
    let mut at = 0u64;
    for _ in 0..n {
        let id = match r.byte()? {
            0 => ReqId::Index(r.u32()?),
            1 => ReqId::Full(r.str()?.into()),
            _ => return None,
        };
        let at_ms = at.wrapping_add(unzigzag(r.u()?) as u64);
        at = at_ms;
        let ready_ms = at_ms.wrapping_add(unzigzag(r.u()?) as u64);
        let model = models.get(r.usize()?)?.clone();
        let recorded = match r.byte()? {
            0 => None,
            _ => Some(TokenCounts {
                input: r.u()?,
                cache_write_5m: r.u()?,
                cache_write_1h: r.u()?,
                cache_read: r.u()?,
                output: r.u()?,
            }),
        };
        let usage_key = match r.byte()? {
            0 => None,
            _ => Some(u64::from_le_bytes(r.fixed()?)),
        };
        let keep = r.usize()?;
        let added = r.usize()?..r.usize()?;
        let nb = r.usize()?;
        let mut breakpoints = smallvec::SmallVec::new();
        for _ in 0..nb {
            let p = r.u32()?;
            breakpoints.push((p, ttl_of(r.byte()?)??));
        }
        let len = r.usize()?;
        let thinking = r.u()?;
        reqs.push(ReqIn {
            id,
            at_ms,
            ready_ms,
            model,
            recorded,
            usage_key,
            step: ChainStep { keep, added, breakpoints },
            len,
            thinking,
        });
    }
    (r.at == r.b.len()).then_some(ChainIn { session, arena, feats, id_prefix, unseen, unseen_again, excerpt, reqs })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::modeled::test_util::fixture_chains;

    #[test]
    fn every_chain_reads_back_as_it_was_stored() {
        let chains = fixture_chains();
        let (blocks, reqs): (usize, usize) =
            (chains.iter().map(|c| c.arena.len()).sum(), chains.iter().map(|c| c.reqs.len()).sum());
        // A guard against a corpus of nothing.
        assert!(blocks > 1000 && reqs > 300, "{blocks} blocks, {reqs} requests");
        for store in [ChainStore::of(&chains), ChainStore::in_file(None)] {
            let mut store = store;
            if store.len() == 0 {
                let mut buf = Vec::new();
                for c in &chains {
                    store.push(c, &mut buf);
                }
            }
            assert_eq!(store.len(), chains.len());
            for (ci, c) in store.each().enumerate() {
                let (i, c) = c.unwrap();
                assert_eq!(i, ci);
                assert_eq!(format!("{c:?}"), format!("{:?}", chains[ci]), "chain {ci}");
                assert_eq!(store.reqs(ci), chains[ci].reqs.len());
            }
        }
    }

    /// Every field at values the fixtures may not hold: the extremes of
    /// each number, times that go back, every place, kind and TTL.
    #[test]
    fn a_chain_of_every_kind_of_value_reads_back_as_it_was() {
        let places = [Place::Tool, Place::System]
            .into_iter()
            .chain(ROLES.iter().flat_map(|&role| [false, true].map(|first| Place::Message { role, first })));
        let arena: Vec<SimBlock> = places
            .enumerate()
            .flat_map(|(i, place)| {
                KINDS.iter().enumerate().map(move |(k, &kind)| SimBlock {
                    hash: u128::MAX - (i * 7 + k) as u128,
                    tokens: [0, 1, 127, 128, u32::MAX][(i + k) % 5],
                    ttl: [None, Some(Ttl::FiveMinutes), Some(Ttl::OneHour)][(i + k) % 3],
                    kind,
                    place,
                    pinned: k % 2 == 0,
                    dropped: i % 2 == 1,
                })
            })
            .collect();
        let feats = (0..arena.len() as u32)
            .map(|i| BlockFeat { bytes: u32::MAX - i, image_tokens: i * 1000, thinking: i % 3 == 0 })
            .collect();
        let req = |at_ms: u64, ready_ms: u64, id: ReqId, model: &str| ReqIn {
            id,
            at_ms,
            ready_ms,
            model: Arc::from(model),
            recorded: Some(TokenCounts {
                input: 1,
                cache_write_5m: u64::MAX,
                cache_write_1h: 0,
                cache_read: 3,
                output: 5,
            }),
            usage_key: Some(u64::MAX),
            step: ChainStep {
                keep: 3,
                added: 3..arena.len(),
                breakpoints: smallvec::smallvec![(0, Ttl::OneHour), (u32::MAX, Ttl::FiveMinutes)],
            },
            len: usize::MAX >> 1,
            thinking: u64::MAX - 1,
        };
        let c = ChainIn {
            session: 123_456,
            arena: arena.clone(),
            feats,
            id_prefix: "s_agent-ü_".into(),
            unseen: Some(0),
            unseen_again: vec![7, 0, usize::MAX >> 1],
            excerpt: true,
            reqs: vec![
                req(1_700_000_000_123, 0, ReqId::Index(u32::MAX), "claude-a"),
                req(1_700_000_000_001, 1_700_000_000_002, ReqId::Full("whole id".into()), "claude-b"),
                ReqIn { recorded: None, usage_key: None, ..req(u64::MAX, 1, ReqId::Index(0), "claude-a") },
            ],
        };
        let plain = ChainIn { unseen: None, excerpt: false, unseen_again: Vec::new(), ..c.clone() };
        let store = ChainStore::of(&[c.clone(), plain.clone()]);
        assert_eq!(format!("{:?}", store.load(0).unwrap()), format!("{c:?}"));
        assert_eq!(format!("{:?}", store.load(1).unwrap()), format!("{plain:?}"));
        // The models are shared by the requests that name them.
        let back = store.load(0).unwrap();
        assert!(Arc::ptr_eq(&back.reqs[0].model, &back.reqs[2].model));
    }

    #[test]
    fn chains_past_the_write_size_read_back_from_the_file() {
        let chains = fixture_chains();
        let mut store = ChainStore::new();
        let mut buf = Vec::new();
        let mut n = 0;
        while store.file_len + (store.pending.len() as u64) < 3 * WRITE_AT as u64 {
            store.push(&chains[n % chains.len()], &mut buf);
            n += 1;
        }
        // Written as they came, WRITE_AT at a time; the rest at the end.
        assert!(store.file_len >= 2 * WRITE_AT as u64, "{}", store.file_len);
        store.finish();
        assert!(store.pending.is_empty() && store.memory.is_empty());
        for (ci, c) in store.each().enumerate() {
            assert_eq!(format!("{:?}", c.unwrap().1), format!("{:?}", chains[ci % chains.len()]), "chain {ci}");
        }
        assert_eq!(store.len(), n);
    }

    #[test]
    fn a_chain_changed_in_place_reads_back_changed_and_the_others_unchanged() {
        let chains = fixture_chains();
        let mut store = ChainStore::of(&chains);
        let mut counts = Vec::new();
        store
            .update(
                |c| {
                    for (i, b) in c.arena.iter_mut().enumerate() {
                        b.tokens = b.tokens.wrapping_mul(3).wrapping_add(1);
                        b.pinned = i % 2 == 0;
                    }
                    c.feats = Vec::new();
                    c.arena.len()
                },
                |ci, n| counts.push((ci, n)),
            )
            .unwrap();
        assert_eq!(counts, chains.iter().map(|c| c.arena.len()).enumerate().collect::<Vec<_>>());
        // The chains are in the file once, as changed (the features gone).
        let (file, memory) = store.sizes();
        assert_eq!(memory, 0);
        assert_eq!(file, store.slots.iter().map(|s| u64::from(s.len)).sum::<u64>());
        assert!(file < ChainStore::of(&chains).sizes().0);
        for (ci, c) in store.each().enumerate() {
            let (_, c) = c.unwrap();
            let want: Vec<(u32, bool)> = chains[ci]
                .arena
                .iter()
                .enumerate()
                .map(|(i, b)| (b.tokens.wrapping_mul(3).wrapping_add(1), i % 2 == 0))
                .collect();
            assert_eq!(c.arena.iter().map(|b| (b.tokens, b.pinned)).collect::<Vec<_>>(), want);
            assert!(c.feats.is_empty());
            assert_eq!(format!("{:?}", c.reqs), format!("{:?}", chains[ci].reqs));
        }
    }

    #[test]
    fn a_file_that_refuses_writes_leaves_the_chains_in_memory() {
        let chains = fixture_chains();
        let named = tempfile::NamedTempFile::new().unwrap();
        // Opened for reading only: every write fails.
        let mut store = ChainStore::in_file(Some(std::fs::File::open(named.path()).unwrap()));
        let mut buf = Vec::new();
        for c in &chains {
            store.push(c, &mut buf);
        }
        store.finish();
        assert!(!store.writable);
        assert!(store.slots.iter().all(|s| s.at == Where::Memory));
        for (ci, c) in store.each().enumerate() {
            assert_eq!(format!("{:?}", c.unwrap().1), format!("{:?}", chains[ci]));
        }
    }

    #[test]
    fn damaged_bytes_are_an_error_naming_the_chain_not_a_panic() {
        let chains = fixture_chains();
        let mut store = ChainStore::in_file(None);
        let mut buf = Vec::new();
        for c in &chains[..3] {
            store.push(c, &mut buf);
        }
        // The second chain cut short by one byte.
        let s = store.slots[1];
        store.slots[1] = Slot { len: s.len - 1, ..s };
        let err = store.load(1).unwrap_err().to_string();
        assert_eq!(err, "the modeled cost's store of chains: chain 1: cannot decode its bytes");
        assert!(store.load(0).is_ok() && store.load(2).is_ok());
        assert!(store.load(3).is_err());
    }
}
