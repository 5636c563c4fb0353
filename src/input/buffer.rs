//! Buffers for the small files read whole, handed from one file to the
//! next. A buffer allocated for each file comes from pages the system has
//! not yet given the process (freed memory goes back to it): the read then
//! faults each page in, zeroed, and those faults cost more than the hashing
//! of a small file. A spare buffer's pages are already there.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::engine::Bytes;
use crate::sys::lock;

/// The bytes of a small file, whose allocation goes back to the spares
/// when the last of its leaves is hashed.
pub(super) struct Buffer(Vec<u8>);

/// The spare buffers by capacity, and their bytes in all.
struct Spares {
    by_class: BTreeMap<usize, Vec<Vec<u8>>>,
    bytes: usize,
}

static SPARE: Mutex<Spares> = Mutex::new(Spares {
    by_class: BTreeMap::new(),
    bytes: 0,
});

impl Buffer {
    /// An empty buffer with room for `len` bytes: a spare one if there is
    /// one of its size class.
    pub(super) fn with_room(len: usize) -> Buffer {
        let class = size_class(len);
        let mut spare = lock(&SPARE);
        if let Some(buffer) = spare.by_class.get_mut(&class).and_then(Vec::pop) {
            spare.bytes -= class;
            return Buffer(buffer);
        }
        drop(spare);
        Buffer(Vec::with_capacity(class))
    }

    pub(super) fn len(&self) -> usize {
        self.0.len()
    }

    pub(super) fn bytes_mut(&mut self) -> &mut Vec<u8> {
        &mut self.0
    }

    /// The bytes, no longer to be handed on.
    pub(super) fn into_inner(mut self) -> Vec<u8> {
        std::mem::take(&mut self.0)
    }
}

impl Bytes for Buffer {
    fn bytes(&self) -> &[u8] {
        &self.0
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        let mut buffer = std::mem::take(&mut self.0);
        let class = buffer.capacity();
        // (One that grew past its class, read from a file longer than it
        // said, is not kept.)
        if class == 0 || class != size_class(class) {
            return;
        }
        buffer.clear();
        let mut spare = lock(&SPARE);
        if spare.bytes + class <= crate::engine::Budget::get().spare_buffers {
            spare.bytes += class;
            spare.by_class.entry(class).or_default().push(buffer);
        }
    }
}

/// The capacity a buffer for `len` bytes gets: four classes for each
/// doubling of the size, so that a buffer holds at most a quarter more
/// than its file, and a spare suits files of close sizes.
fn size_class(len: usize) -> usize {
    let len = len.max(4096);
    len.next_multiple_of(len.next_power_of_two() / 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_size_class_holds_its_size_and_at_most_a_quarter_more() {
        for len in (0..1 << 20)
            .step_by(997)
            .chain([4096, 4097, 1 << 18, (1 << 18) + 1])
        {
            let class = size_class(len);
            assert!(class >= len && class >= 4096, "{len}: {class}");
            assert!(len < 4096 || class <= len + len / 4, "{len}: {class}");
            assert_eq!(size_class(class), class, "{len}: {class}");
        }
    }

    #[test]
    fn a_buffer_dropped_is_handed_to_the_next_of_its_class() {
        // (A size no file of another test reads into.)
        let mut first = Buffer::with_room((3 << 20) + 5000);
        first.bytes_mut().extend_from_slice(b"abc");
        let at = first.bytes_mut().as_ptr();
        drop(first);
        let mut second = Buffer::with_room((3 << 20) + 5100);
        assert!(second.bytes_mut().is_empty());
        assert_eq!(second.bytes_mut().as_ptr(), at);
    }
}
