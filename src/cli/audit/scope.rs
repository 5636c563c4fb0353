//! What an audit covers among the listed files: those its walk would meet.
//! A listed file under no directory audited, left out by the excludes,
//! deeper than `--max-depth`, or (`-x`) on another file system than its
//! directory's, is out of scope: neither read nor missing, only counted.
//! So `-c --audit Photos/2020 LIST` checks that folder alone, and an
//! excluded cache is neither read nor said to be gone.

use std::cell::{Cell, RefCell};

use bt2sum::format::name::Name;

use crate::cli::plan::Auditing;
use crate::cli::walk::WalkPlan;

/// The audit's scope, and the listed files found outside it so far.
pub struct Scope<'a> {
    /// The roots, normalized (empty: the current directory).
    roots: Vec<Vec<u8>>,
    walk: &'a WalkPlan,
    /// With `-x`, each root's file system.
    #[cfg(unix)]
    devices: Option<Vec<u64>>,
    /// Listed files out of scope (a file counted once, however many units
    /// it has), while counting.
    outside: Cell<u64>,
    last: RefCell<Vec<u8>>,
    counting: Cell<bool>,
    /// The first of them, normalized.
    first: RefCell<Option<Vec<u8>>>,
}

impl<'a> Scope<'a> {
    /// The scope of `audit`, or `None` where every listed file is in it (the
    /// current directory audited, walked whole).
    pub fn new(audit: &'a Auditing) -> Option<Scope<'a>> {
        let roots: Vec<Vec<u8>> = audit
            .roots
            .iter()
            .map(|root| Name::normalized(root.as_encoded_bytes()))
            .collect();
        let walk = &audit.walk;
        let whole = roots.iter().any(Vec::is_empty)
            && walk.excludes.is_empty()
            && walk.max_depth.is_none()
            && !walk.one_file_system;
        if whole {
            return None;
        }
        #[cfg(unix)]
        let devices = walk.one_file_system.then(|| {
            use std::os::unix::fs::MetadataExt;
            let device = |root: &std::ffi::OsString| std::fs::metadata(root).ok().map(|m| m.dev());
            audit.roots.iter().filter_map(device).collect()
        });
        Some(Scope {
            roots,
            walk,
            #[cfg(unix)]
            devices,
            outside: Cell::new(0),
            last: RefCell::new(Vec::new()),
            counting: Cell::new(true),
            first: RefCell::new(None),
        })
    }

    /// Whether the listed file `name` is in scope; one out of it is counted
    /// while counting.
    pub fn holds(&self, name: &[u8]) -> bool {
        let held = self.covers(name);
        if !held && self.counting.get() && *self.last.borrow() != name {
            self.outside.set(self.outside.get() + 1);
            *self.last.borrow_mut() = name.to_vec();
            self.first
                .borrow_mut()
                .get_or_insert_with(|| Name::normalized(name));
        }
        held
    }

    /// The lists were gone through once: stops counting.
    pub fn counted(&self) {
        self.counting.set(false);
    }

    pub fn outside(&self) -> u64 {
        self.outside.get()
    }

    pub fn first_outside(&self) -> Option<Vec<u8>> {
        self.first.borrow().clone()
    }

    fn covers(&self, name: &[u8]) -> bool {
        let normalized = Name::normalized(name);
        let below = self.roots.iter().find_map(|root| match root.is_empty() {
            true => (!normalized.starts_with(b"/")).then_some(&normalized[..]),
            false => normalized
                .strip_prefix(&root[..])
                .and_then(|rest| rest.strip_prefix(b"/")),
        });
        let Some(below) = below.and_then(|below| Name::listed(below).path()) else {
            return false;
        };
        let depth = below.components().count();
        if self.walk.excludes.excludes_file(&below)
            || self.walk.max_depth.is_some_and(|most| depth > most)
        {
            return false;
        }
        // With -x, on the file system of a root (one that is not there is:
        // it is missing, then).
        #[cfg(unix)]
        if let (Some(devices), Some(path)) = (&self.devices, Name::listed(name).path()) {
            use std::os::unix::fs::MetadataExt;
            let metadata = std::fs::metadata(&path).ok();
            return metadata.is_none_or(|metadata| devices.contains(&metadata.dev()));
        }
        true
    }
}
