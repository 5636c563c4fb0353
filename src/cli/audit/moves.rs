//! Finding moves: the digests of the missing entries and of the new files,
//! sorted together, and each digest that exactly one of each has.

use std::io;

use serde::{Deserialize, Serialize};
use serde_bytes::ByteBuf;

use bt2sum::Stamp;
use bt2sum::format::stat::Mtime;
use bt2sum::spill::Spill;

/// A missing entry or a new file, and its digest: sorted, a digest's
/// missing entries come first, then its new files.
pub(super) type Joined = (ByteBuf, Which);

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(super) enum Which {
    /// By index; the missing entry named as its list gives it.
    Missing(u64, ByteBuf),
    New(u64, NewFile),
}

/// A new file as a move keeps it: its name, and its size and modification
/// time when it was hashed (`None`: not a regular file).
#[derive(Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(super) struct NewFile {
    #[serde(with = "serde_bytes")]
    pub name: Vec<u8>,
    pub stat: Option<(u64, Mtime)>,
}

impl NewFile {
    pub(super) fn of(name: &[u8], stamp: Option<&Stamp>) -> NewFile {
        let stat = stamp.and_then(|stamp| Some((stamp.size(), Mtime::of(stamp.modified()?))));
        NewFile {
            name: name.to_vec(),
            stat,
        }
    }
}

/// The moves an audit found, each a missing entry and a new file, sorted
/// by the index of each: by new file, the missing entry's name; by missing
/// entry, the new file.
pub(super) struct Moves {
    pub by_new: Spill<(u64, ByteBuf)>,
    pub by_missing: Spill<(u64, NewFile)>,
}

/// The moves among the joined records: each digest that exactly one
/// missing entry and exactly one new file have.
pub(super) fn moves(joined: Spill<Joined>) -> io::Result<Moves> {
    let mut by_new = Spill::sorted();
    let mut by_missing = Spill::sorted();
    let mut group: Vec<Joined> = Vec::new();
    let mut pair = |group: &mut Vec<Joined>| -> io::Result<()> {
        if let [entry, file] = &mut group[..]
            && let (_, Which::Missing(missing, name)) = entry
            && let (_, Which::New(new, file)) = file
        {
            by_new.push(&(*new, std::mem::take(name)))?;
            by_missing.push(&(*missing, std::mem::take(file)))?;
        }
        group.clear();
        Ok(())
    };
    for record in joined.into_sorted()? {
        let record = record?;
        // (Digests compared in constant time, as every digest is.)
        if group
            .first()
            .is_some_and(|first| !bt2sum::ct::eq(&first.0, &record.0))
        {
            pair(&mut group)?;
        }
        // (A group of more than two is no move: only its size matters.)
        if group.len() < 3 {
            group.push(record);
        }
    }
    pair(&mut group)?;
    Ok(Moves { by_new, by_missing })
}

/// Each name of `names` with the move that pairs it (by index).
pub(super) fn paired<'a, M: Serialize + serde::de::DeserializeOwned>(
    names: &'a mut Spill<ByteBuf>,
    moves: &'a mut Spill<(u64, M)>,
) -> impl Iterator<Item = io::Result<(Vec<u8>, Option<M>)>> + 'a {
    let mut moves = moves.iter().peekable();
    names.iter().enumerate().map(move |(index, name)| {
        let moved = moves
            .next_if(|record| matches!(record, Ok((at, _)) if *at == index as u64))
            .transpose()?;
        Ok((name?.into_vec(), moved.map(|(_, moved)| moved)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_one_missing_entry_and_one_new_file_share_is_a_move() {
        let new = |name: &[u8]| NewFile::of(name, None);
        let mut joined = Spill::sorted();
        // Digest 1: one of each, a move. 2: two missing entries, 3: two new
        // files, 4: a missing entry alone, 5: a new file alone; 6: one of
        // each again.
        let records = [
            (1, Which::New(0, new(b"new-a"))),
            (1, Which::Missing(3, ByteBuf::from(b"old-a"))),
            (2, Which::Missing(0, ByteBuf::from(b"old-b"))),
            (2, Which::Missing(1, ByteBuf::from(b"old-c"))),
            (2, Which::New(1, new(b"new-b"))),
            (3, Which::New(2, new(b"new-c"))),
            (3, Which::New(3, new(b"new-d"))),
            (3, Which::Missing(2, ByteBuf::from(b"old-d"))),
            (4, Which::Missing(4, ByteBuf::from(b"old-e"))),
            (5, Which::New(4, new(b"new-e"))),
            (6, Which::New(5, new(b"new-f"))),
            (6, Which::Missing(5, ByteBuf::from(b"old-f"))),
        ];
        for (digest, which) in records {
            joined.push(&(ByteBuf::from([digest; 8]), which)).unwrap();
        }
        let mut moves = moves(joined).unwrap();
        let by_new: Vec<_> = moves.by_new.iter().map(Result::unwrap).collect();
        let by_missing = moves.by_missing.iter().map(Result::unwrap);
        let by_missing: Vec<_> = by_missing.collect();
        let named = |index, name: &[u8]| (index, ByteBuf::from(name));
        assert_eq!(by_new, [named(0, b"old-a"), named(5, b"old-f")]);
        assert_eq!(by_missing, [(3, new(b"new-a")), (5, new(b"new-f"))]);
    }
}
