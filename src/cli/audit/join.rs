//! Finding moves: the digests of the missing entries and of the new files,
//! sorted together, and each digest that exactly one of each has.

use std::io;

use bt2sum::Digest;
use bt2sum::Stamp;
use bt2sum::format::stat::Mtime;
use bt2sum::spill::{IN_MEMORY, Sorter, Spool};

/// A record of the join: the digest (its length, then its bytes), then 0
/// and a missing entry's index and name, or 1 and a new file's index and
/// name (so that, sorted, a digest's missing entries come first).
pub(super) struct Joined {
    digest: Vec<u8>,
    missing: bool,
    index: u64,
    name: Vec<u8>,
}

impl Joined {
    /// The record of missing entry `index`, named `name`.
    pub(super) fn missing(digest: &Digest, index: u64, name: &[u8]) -> Vec<u8> {
        Self::encode(digest, 0, index, name)
    }

    /// The record of new file `index`, named `name`.
    pub(super) fn new_file(digest: &Digest, index: u64, name: &[u8]) -> Vec<u8> {
        Self::encode(digest, 1, index, name)
    }

    fn encode(digest: &Digest, kind: u8, index: u64, name: &[u8]) -> Vec<u8> {
        let bytes = digest.as_bytes();
        let mut record = Vec::with_capacity(bytes.len() + 10 + name.len());
        record.push(bytes.len() as u8);
        record.extend_from_slice(bytes);
        record.push(kind);
        record.extend_from_slice(&index.to_be_bytes());
        record.extend_from_slice(name);
        record
    }

    fn decode(record: &[u8]) -> Joined {
        let len = usize::from(record[0]);
        let index = u64::from_be_bytes(record[2 + len..10 + len].try_into().expect("8 bytes"));
        Joined {
            digest: record[1..1 + len].to_vec(),
            missing: record[1 + len] == 0,
            index,
            name: record[10 + len..].to_vec(),
        }
    }
}

/// The moves an audit found, each a missing entry and a new file.
pub(super) struct Moves {
    /// By new file: its index (8 bytes, big-endian) and the missing entry's
    /// name; sorted.
    pub by_new: Spool,
    /// By missing entry: its index (8 bytes, big-endian) and the new file
    /// ([`NewFile`]); sorted.
    pub by_missing: Spool,
}

/// The moves among the joined records: each digest that exactly one
/// missing entry and exactly one new file have.
pub(super) fn moves(joined: Sorter) -> io::Result<Moves> {
    let mut by_new = Sorter::new(IN_MEMORY);
    let mut by_missing = Sorter::new(IN_MEMORY);
    let mut group: Vec<Joined> = Vec::new();
    let mut pair = |group: &mut Vec<Joined>| -> io::Result<()> {
        if let [entry, file] = &group[..]
            && entry.missing
            && !file.missing
        {
            by_new.push([&file.index.to_be_bytes()[..], &entry.name].concat())?;
            by_missing.push([&entry.index.to_be_bytes()[..], &file.name].concat())?;
        }
        group.clear();
        Ok(())
    };
    for record in joined.into_sorted()? {
        let record = Joined::decode(&record?);
        if group
            .first()
            .is_some_and(|first| first.digest != record.digest)
        {
            pair(&mut group)?;
        }
        // (A group of more than two is no move: only its size matters.)
        if group.len() < 3 {
            group.push(record);
        }
    }
    pair(&mut group)?;
    Ok(Moves {
        by_new: spooled(by_new)?,
        by_missing: spooled(by_missing)?,
    })
}

/// A sorter's records, sorted, in a spool that can be read again.
fn spooled(sorter: Sorter) -> io::Result<Spool> {
    let mut spool = Spool::new(IN_MEMORY);
    for record in sorter.into_sorted()? {
        spool.push(&record?)?;
    }
    Ok(spool)
}

/// A new file as a move's record holds it: its name, and its size and
/// modification time when it was hashed (`None`: not a regular file).
pub(super) struct NewFile {
    pub name: Vec<u8>,
    pub stat: Option<(u64, Mtime)>,
}

impl NewFile {
    /// The file's record: 0, or 1 and its size, seconds and nanoseconds;
    /// then its name.
    pub(super) fn encode(name: &[u8], stamp: Option<&Stamp>) -> Vec<u8> {
        let stat = stamp.and_then(|stamp| Some((stamp.size(), Mtime::of(stamp.modified()?))));
        let mut record = Vec::with_capacity(21 + name.len());
        match stat {
            None => record.push(0),
            Some((size, mtime)) => {
                record.push(1);
                record.extend_from_slice(&size.to_be_bytes());
                record.extend_from_slice(&mtime.seconds.to_be_bytes());
                record.extend_from_slice(&mtime.nanoseconds.to_be_bytes());
            }
        }
        record.extend_from_slice(name);
        record
    }

    pub(super) fn decode(record: &[u8]) -> NewFile {
        if record[0] == 0 {
            return NewFile {
                name: record[1..].to_vec(),
                stat: None,
            };
        }
        let number = |at: usize| u64::from_be_bytes(record[at..at + 8].try_into().expect("8"));
        let nanoseconds = u32::from_be_bytes(record[17..21].try_into().expect("4 bytes"));
        NewFile {
            name: record[21..].to_vec(),
            stat: Some((
                number(1),
                Mtime {
                    seconds: number(9) as i64,
                    nanoseconds,
                },
            )),
        }
    }
}

/// The index at the head of a record of [`Moves`].
pub(super) fn index_of(record: &[u8]) -> u64 {
    u64::from_be_bytes(record[..8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_one_missing_entry_and_one_new_file_share_is_a_move() {
        let digest = |byte: u8| Digest::from_slice(&[byte; 8]).unwrap();
        let mut joined = Sorter::new(IN_MEMORY);
        // Digest 1: one of each, a move. 2: two missing entries, 3: two new
        // files, 4: a missing entry alone, 5: a new file alone; 6: one of
        // each again.
        let records = [
            Joined::new_file(&digest(1), 0, b"new-a"),
            Joined::missing(&digest(1), 3, b"old-a"),
            Joined::missing(&digest(2), 0, b"old-b"),
            Joined::missing(&digest(2), 1, b"old-c"),
            Joined::new_file(&digest(2), 1, b"new-b"),
            Joined::new_file(&digest(3), 2, b"new-c"),
            Joined::new_file(&digest(3), 3, b"new-d"),
            Joined::missing(&digest(3), 2, b"old-d"),
            Joined::missing(&digest(4), 4, b"old-e"),
            Joined::new_file(&digest(5), 4, b"new-e"),
            Joined::new_file(&digest(6), 5, b"new-f"),
            Joined::missing(&digest(6), 5, b"old-f"),
        ];
        for record in records {
            joined.push(record).unwrap();
        }
        let mut moves = moves(joined).unwrap();
        let by_new: Vec<Vec<u8>> = moves
            .by_new
            .records()
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let by_missing: Vec<Vec<u8>> = moves
            .by_missing
            .records()
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let at = |index: u64, name: &[u8]| [&index.to_be_bytes()[..], name].concat();
        assert_eq!(by_new, [at(0, b"old-a"), at(5, b"old-f")]);
        assert_eq!(by_missing, [at(3, b"new-a"), at(5, b"new-f")]);
    }
}
