//! `--repair-from`: the damaged files a check finds are noted as it goes,
//! and mended ([`Mender`]) once every file of the list is checked: so that
//! no file is written while a pass over it is still being hashed, and so
//! that a list naming one file with two contents is known first (such a
//! file is never written). A missing file with a checksum line is restored
//! whole from its copy; not in an audit, where it may have moved.

use std::collections::HashMap;
use std::fs::File;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher, Hash, Hasher};
use std::io;
use std::path::Path;

use bt2sum::format::name::Name;
use bt2sum::format::stat::Mtime;
use bt2sum::spill::Spill;
use bt2sum::verify::Verdict;
use bt2sum::verify::{Checked, Subject};
use bt2sum::{Digest, Stamp};
use mend::{Damaged, Lost, Mended, Mender, Unmendable, hashes_to, set_modified};

use super::output::{JsonName, Printer, Record, Verbosity};
use super::plan::Repair;
use super::tally::Tally;

mod mend;

/// Mends the files a check finds damaged.
pub struct Repairs {
    mender: Mender,
    pending: Spill<Damaged>,
    /// Per name (hashed) listed so far in the list, what its first entry
    /// says the file is (hashed) and that entry's first line; the names
    /// whose entries disagree, and those lines.
    claims: HashMap<u64, (u64, u64)>,
    contradicted: HashMap<u64, (u64, u64)>,
    file: Noted,
    /// The missing files to restore, where they are restored.
    lost: Option<Spill<Lost>>,
}

/// What is known so far of the file being checked: what its entry says of
/// it (hashed); whether it cannot be mended (said already), and whether
/// leaves of it wait; the checksum it must have once mended (if its leaf
/// lines leave bytes out); its stat line's time; and the file as it would
/// be restored.
#[derive(Default)]
struct Noted {
    claim: DefaultHasher,
    unmendable: bool,
    leaves_wait: bool,
    whole: Option<Digest>,
    mtime: Option<Mtime>,
    lost: Option<Lost>,
}

impl Noted {
    /// Starts on the file whose first pass `checked` is.
    fn new(checked: &Checked) -> Noted {
        // (A stat line is on the first pass, with the checksum line.)
        let stat = checked.pass.stat;
        let mtime = stat.map(|(_, mtime)| mtime);
        Noted {
            mtime,
            lost: checked.expected().map(|digest| Lost {
                name: checked.pass.name.clone(),
                tree: checked.pass.tree,
                digest: *digest,
                length: stat.map(|(size, _)| size),
                mtime,
            }),
            ..Noted::default()
        }
    }
}

impl Repairs {
    pub fn new(repair: &Repair, restore: bool) -> Repairs {
        Repairs {
            mender: Mender::new(repair),
            pending: Spill::default(),
            claims: HashMap::new(),
            contradicted: HashMap::new(),
            file: Noted::default(),
            lost: restore.then(Spill::default),
        }
    }

    /// Notes the failing leaves one pass found, to be mended at the list's
    /// end; says at once why a damaged file cannot be mended.
    pub fn note(&mut self, checked: &Checked, printer: &mut Printer<'_>) -> io::Result<()> {
        if !checked.pass.continues {
            self.file = Noted::new(checked);
        }
        self.keep_claim(checked);
        if checked.is_missing() {
            return self.note_missing(checked, printer);
        }
        self.judge(checked, printer)?;
        let mendable = (checked.pass.total, checked.stamp, self.file.unmendable);
        let (Some(listed_length), Some(stamp), false) = mendable else {
            return Ok(());
        };
        let failing = checked.failed_leaves();
        // (Its first record is the one pushed while no leaves of it wait.)
        let opens = !self.file.leaves_wait;
        self.file.leaves_wait |= !failing.is_empty();
        // At the file's end its length, and its checksum, are seen to once
        // its leaves are mended.
        let verdict = checked.file_verdict();
        let file_failed = matches!(verdict, Some(Verdict::Failed | Verdict::Missing));
        let last_pass = !checked.pass.continued && file_failed;
        if last_pass && !self.file.leaves_wait {
            let why = match self.file.whole {
                Some(_) => {
                    "bytes its leaf lines do not list differ: only a copy of the whole file mends them"
                }
                None => "its length differs from its leaf lines' total, and no leaf line says how",
            };
            return printer.error(&checked.pass.name, &format!("cannot be repaired: {why}"));
        }
        if failing.is_empty() && !last_pass {
            return Ok(());
        }
        self.pending.push(&Damaged {
            name: checked.pass.name.clone(),
            tree: checked.pass.tree,
            listed_length,
            failing,
            whole: self.file.whole,
            opens,
            last_pass,
            stamp,
            mtime: self.file.mtime,
        })
    }

    /// Notes a missing file, to restore at the list's end.
    fn note_missing(&mut self, checked: &Checked, printer: &mut Printer<'_>) -> io::Result<()> {
        if let Some(lost) = self.file.lost.as_mut() {
            lost.length = lost.length.or(checked.pass.total);
        }
        let Some(restored) = self.lost.as_mut().filter(|_| !checked.pass.continued) else {
            return Ok(());
        };
        match self.file.lost.take() {
            Some(lost) => restored.push(&lost),
            None => printer.error(
                &checked.pass.name,
                "cannot be restored: only an entry with a checksum line is restored from \
                 its copy",
            ),
        }
    }

    /// Sees from the pass whether the file can still be mended, and
    /// whether only its checksum line will say it is.
    fn judge(&mut self, checked: &Checked, printer: &mut Printer<'_>) -> io::Result<()> {
        let failed = |verdict: &Verdict| matches!(verdict, Verdict::Failed | Verdict::Missing);
        let checksum_failed = |(subject, verdict)| subject == Subject::Checksum && failed(&verdict);
        if checked.lines().any(checksum_failed) && !checked.lists_every_leaf() {
            self.file.whole = checked.expected().copied();
        }
        let failed_here = checked.lines().any(|(_, verdict)| failed(&verdict));
        if failed_here && checked.outcome.is_err() {
            // Unreadable: said already.
            self.file.unmendable = true;
        }
        if failed_here
            && !self.file.unmendable
            && let Some(why) = why_not(checked)
        {
            self.file.unmendable = true;
            printer.error(&checked.pass.name, &format!("cannot be repaired: {why}"))?;
        }
        Ok(())
    }

    /// Keeps what the pass's entry says the file is, and, on its last pass,
    /// whether another entry of the list said otherwise.
    fn keep_claim(&mut self, checked: &Checked) {
        let (tree, length) = (&checked.pass.tree, checked.pass.total);
        let algorithm = (tree.algorithm() as u8, tree.digest_size());
        let leaf_size = length.map(|_| tree.leaf_size());
        let expected = checked.expected().map(Digest::as_bytes);
        let claim = &mut self.file.claim;
        (algorithm, leaf_size, length, expected).hash(claim);
        for (index, digest) in checked.listed_leaves() {
            (index, digest.as_bytes()).hash(claim);
        }
        if checked.pass.continued {
            return;
        }
        let (name, claim) = (name_key(&checked.pass.name), claim.finish());
        let line = *checked.file_lines().start();
        let &mut (first, first_line) = self.claims.entry(name).or_insert((claim, line));
        if first != claim {
            self.contradicted.entry(name).or_insert((first_line, line));
        }
    }

    /// Mends the damaged files noted in the list just checked, and restores
    /// the missing ones, printing and counting what became of each.
    pub fn mend(&mut self, printer: &mut Printer<'_>, tally: &mut Tally) -> io::Result<()> {
        self.claims.clear();
        let contradicted = std::mem::take(&mut self.contradicted);
        // A file listed twice alike is mended on its first entry: on the
        // next, it is the file as that mending left it.
        let mut mended_here: HashMap<Stamp, Stamp> = HashMap::new();
        // The file being mended, opened on its first record (`None` if it
        // could not be, as was said then); whether every leaf of it so far
        // was mended, and whether one of them was its last (whose failing
        // may be its length's).
        let (mut target, mut mended, mut ends) = (None, true, false);
        let mut target_name = Vec::new();
        let mut pending = std::mem::take(&mut self.pending);
        for damaged in pending.iter() {
            let damaged = damaged?;
            // (A name no path here can have was refused as improperly
            // formatted.)
            let path = Name::listed(&damaged.name).path().unwrap_or_default();
            // (A file whose last pass could not be read has no last record:
            // the next file's first record opens the next file. A record
            // of a file other than the one open opens its own whatever it
            // says: no file is ever written another's bytes.)
            if damaged.opens || damaged.name != target_name {
                target_name.clone_from(&damaged.name);
                // (Never written where its list contradicts itself about it.)
                let opened = match contradicted.get(&name_key(&damaged.name)) {
                    Some(&(first, second)) => Err(Unmendable::Contradicted(first, second)),
                    None => {
                        let seen = mended_here.get(&damaged.stamp).unwrap_or(&damaged.stamp);
                        self.mender.open(&path, seen)
                    }
                };
                if let Err(why) = &opened {
                    printer.error(&damaged.name, &format!("cannot be repaired: {why}"))?;
                }
                (target, mended, ends) = (opened.ok(), true, false);
            }
            let Some(file) = &target else {
                tally.unrepaired += damaged.failing.len() as u64;
                continue;
            };
            if !damaged.failing.is_empty() {
                let leaves = damaged.tree.leaf_count(damaged.listed_length);
                // (In leaf order: the last failing leaf is the one that may end it.)
                let last = damaged.failing.last();
                ends |= last.is_some_and(|(index, _)| index + 1 == leaves);
                mended &= mend_leaves(&mut self.mender, file, &path, &damaged, printer, tally)?;
            }
            if damaged.last_pass {
                finish_file(&self.mender, file, &damaged, (mended, ends), printer, tally)?;
                if let Ok(now) = Stamp::now(file) {
                    mended_here.insert(damaged.stamp, now);
                }
            }
        }
        self.restore_lost(printer, tally)
    }

    fn restore_lost(&mut self, printer: &mut Printer<'_>, tally: &mut Tally) -> io::Result<()> {
        let mut lost = self.lost.as_mut().map(std::mem::take).unwrap_or_default();
        for lost in lost.iter() {
            let lost = lost?;
            let path = Name::listed(&lost.name).path().unwrap_or_default();
            let reason = (self.mender.restore(&path, &lost).err()).map(|why| why.to_string());
            let (count, verdict) = match reason {
                None => (&mut tally.restored, "RESTORED"),
                Some(_) => (&mut tally.unrestored, "FAILED"),
            };
            *count += 1;
            printer.emit(&Record::Restore {
                name: JsonName(Some(&lost.name)),
                verdict,
                reason: reason.as_deref(),
            })?;
        }
        Ok(())
    }
}

/// Ends the mending of a file at its last record, given whether every leaf
/// of it was mended and whether its last was: its length settled and its
/// checksum seen to, it is counted mended and its time put back.
fn finish_file(
    mender: &Mender,
    target: &File,
    damaged: &Damaged,
    (mut mended, ends): (bool, bool),
    printer: &mut Printer<'_>,
    tally: &mut Tally,
) -> io::Result<()> {
    if ends {
        match mender.settle_length(target, damaged.listed_length) {
            Ok(Some(cut)) if printer.verbosity != Verbosity::Status => {
                printer.say(&damaged.name, &cut)?
            }
            Ok(_) => {}
            Err(why) => {
                printer.error(&damaged.name, &why)?;
                mended = false;
            }
        }
    }
    if mended && let Some(expected) = &damaged.whole {
        // Its leaf lines leave bytes out: only the whole file says whether
        // it verifies.
        if !hashes_to(target, &damaged.tree, expected).unwrap_or(false) {
            let message = "still fails its checksum line: bytes its leaf lines do not list differ";
            printer.error(&damaged.name, message)?;
            mended = false;
        }
    }
    if !mended {
        return Ok(());
    }
    tally.mended_files += 1;
    // Its stat line then holds, so that a later change of its bytes reads
    // as damage, never as an edit.
    let mtime = damaged
        .mtime
        .or_else(|| damaged.stamp.modified().map(Mtime::of));
    match mtime.map(|mtime| set_modified(target, mtime)) {
        Some(Err(error)) if damaged.mtime.is_some() => {
            let message = format!(
                "is repaired, but its modification time cannot be set back to its stat \
                 line's ({}): that stat line is stale until an audit with --update writes it \
                 anew (bt2sum -c --audit DIR --update LIST)",
                bt2sum::plain_message(&error)
            );
            printer.error(&damaged.name, &message)
        }
        _ => Ok(()),
    }
}

/// A name as the claims and contradictions of a list know it.
fn name_key(name: &[u8]) -> u64 {
    BuildHasherDefault::<DefaultHasher>::default().hash_one(Name::normalized(name))
}

/// Why a damaged file cannot be mended leaf by leaf, if it cannot.
fn why_not(checked: &Checked) -> Option<&'static str> {
    Some(if checked.pass.name == b"-" {
        "it is standard input"
    } else if checked.pass.total.is_none() {
        "it is listed without leaf lines (list its leaves with --leaves, and a damaged leaf can \
         be mended alone)"
    } else if checked.changed() {
        "its size or modification time differ from its stat line's: edited, not damaged"
    } else if checked.outcome.is_ok() && checked.stamp.is_none() {
        "it is not a regular file"
    } else {
        return None;
    })
}

/// Whether one pass's failing leaves all verify now.
fn mend_leaves(
    mender: &mut Mender,
    file: &File,
    path: &Path,
    damaged: &Damaged,
    printer: &mut Printer<'_>,
    tally: &mut Tally,
) -> io::Result<bool> {
    let name = &damaged.name[..];
    let mut lines = Ok(());
    let mut all_good = true;
    let mended = mender.mend(file, path, damaged, |index, bytes, mend| {
        all_good &= mend.is_ok();
        match mend {
            Ok(Mended::Intact) => return,
            Ok(Mended::Repaired) => tally.repaired += 1,
            Err(_) => tally.unrepaired += 1,
        }
        // `NAME: leaf I: REPAIRED`, or `FAILED` and why.
        if lines.is_ok() {
            let why = mend.as_ref().err().map(ToString::to_string);
            lines = printer.emit(&Record::Repair {
                name: JsonName(Some(name)),
                index,
                offset: bytes.start,
                length: bytes.end - bytes.start,
                verdict: if why.is_none() { "REPAIRED" } else { "FAILED" },
                reason: why.as_deref(),
            });
        }
    });
    lines?;
    if let Err(unmendable) = mended {
        tally.unrepaired += damaged.failing.len() as u64;
        printer.error(name, &format!("cannot be repaired: {unmendable}"))?;
        return Ok(false);
    }
    Ok(all_good)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::output::Layout;
    use bt2sum::{LastNode, TreeParams, leaf_digest};
    use std::path::Component;

    /// A file whose last pass could not be read ends without its last
    /// record: the next file's leaves go to that file, never to it.
    #[test]
    fn a_file_without_its_last_record_lends_its_descriptor_to_no_other() {
        let dir = tempfile::tempdir().unwrap();
        let (files, copies) = (dir.path().join("files"), dir.path().join("copies"));
        let tree = TreeParams::new(bt2sum::Algorithm::Blake2b, 32, 4).unwrap();
        let repair = Repair {
            copy: copies.clone(),
            truncate: false,
            any_path: true,
            setid: false,
        };
        (std::fs::create_dir(&files).and(std::fs::create_dir(&copies))).unwrap();
        let mut repairs = Repairs::new(&repair, false);
        for (name, good, last_pass) in [("a", b"AAAA", false), ("b", b"BBBB", true)] {
            let path = files.join(name);
            let below = path
                .components()
                .filter(|part| matches!(part, Component::Normal(_)));
            let copy = copies.join(below.collect::<std::path::PathBuf>());
            std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
            std::fs::write(&copy, good).unwrap();
            std::fs::write(&path, b"xxxx").unwrap();
            let damaged = Damaged {
                name: path.as_os_str().as_encoded_bytes().to_vec(),
                tree,
                listed_length: 4,
                failing: vec![(0, leaf_digest(&tree, 0, LastNode::Yes, good))],
                whole: None,
                opens: true,
                last_pass,
                stamp: Stamp::now(&File::open(&path).unwrap()).unwrap(),
                mtime: None,
            };
            repairs.pending.push(&damaged).unwrap();
        }
        let (mut out, mut tally) = (Vec::new(), Tally::default());
        let mut printer = Printer::new(&mut out, false, Layout::default(), Verbosity::Normal);
        repairs.mend(&mut printer, &mut tally).unwrap();
        assert_eq!(std::fs::read(files.join("a")).unwrap(), b"AAAA");
        assert_eq!(std::fs::read(files.join("b")).unwrap(), b"BBBB");
        assert_eq!((tally.repaired, tally.mended_files), (2, 1));
    }
}
