//! Where a mapped file cannot shrink, no guard is needed: Windows refuses to
//! truncate a file while a view of it is mapped (`ERROR_USER_MAPPED_FILE`),
//! so no page of a window can vanish under it. A file written through
//! another handle while it is hashed still changes the bytes read; the
//! comparison of size and times before and after reports that, as
//! everywhere.

/// A window as the guard sees it: nothing to watch.
pub(crate) struct Registration;

impl Registration {
    /// Accepts any non-empty window.
    pub(crate) fn new(_start: *const u8, len: usize) -> Option<Registration> {
        (len > 0).then_some(Registration)
    }

    /// A page never vanishes: never faulted.
    pub(crate) fn faulted(&self) -> bool {
        false
    }
}
