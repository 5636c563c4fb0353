//! Where the reader thread of `readahead.rs` is not built (Windows, which
//! has no cheap way to tell which pages of a file are in memory, so that a
//! reader would copy files that are in memory already), no thread reads
//! ahead: each mapped window is handed to the system's own prefetching as
//! it is mapped, in file order (`PrefetchVirtualMemory`, see `mapped`).

use std::fs::File;
use std::ops::Range;

/// Never made: there is no reader.
pub(super) enum ReadAhead {}

/// Never made: nothing to wait for.
pub(super) enum Arrival {}

/// Nothing is read ahead, so nothing needs to be told in memory.
pub(super) fn in_memory(_file: &File, _bytes: Range<u64>) -> bool {
    false
}

impl ReadAhead {
    /// No reader.
    pub(super) fn new(_file: &File) -> Option<ReadAhead> {
        None
    }

    pub(super) fn ask(&self, _bytes: Range<u64>) {
        match *self {}
    }

    pub(super) fn arrival(&self, _bytes: Range<u64>) -> Option<Arrival> {
        match *self {}
    }
}

impl Arrival {
    pub(super) fn wait(&self, _bytes: Range<usize>) {
        match *self {}
    }
}
