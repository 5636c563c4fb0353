//! The binary's allocator: the system's, with a reserve for the last small
//! allocations.
//!
//! bt2sum grows what grows with its input fallibly (`try_reserve`), and
//! reports `Cannot allocate memory` when it is refused. But the standard
//! library and rayon allocate small blocks infallibly (a job, a thread's
//! bookkeeping), and at the very edge of an address-space limit (`ulimit
//! -v`) such a block can be refused too, which would abort the process. A
//! block set aside at start is given back to the system the first time a
//! small allocation is refused, and that allocation is tried once more: it
//! then succeeds, and the fallible allocations that follow see the memory
//! is short and say so. Large allocations never draw on the reserve: a
//! refused batch buffer is an answer, not an emergency.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicPtr, Ordering};

/// The reserve: 1 MiB of address space, never touched.
const RESERVE: Layout = match Layout::from_size_align(1 << 20, 4096) {
    Ok(layout) => layout,
    Err(_) => panic!("a valid layout"),
};

/// The largest allocation that may draw on the reserve.
const SMALL: usize = 64 << 10;

/// The reserve's block, while it is held; null once given back (or if it
/// could not be had).
static SPARE: AtomicPtr<u8> = AtomicPtr::new(null_mut());

/// Sets the reserve aside; called once, first thing.
pub fn set_aside() {
    // SAFETY: RESERVE has a non-zero size.
    let block = unsafe { System.alloc(RESERVE) };
    let earlier = SPARE.swap(block, Ordering::AcqRel);
    if !earlier.is_null() {
        // SAFETY: a block set aside earlier, with RESERVE, taken out of
        // SPARE by the swap, so freed once.
        unsafe { System.dealloc(earlier, RESERVE) };
    }
}

/// Gives the reserve back to the system; false if there is none left.
fn give_back() -> bool {
    let block = SPARE.swap(null_mut(), Ordering::AcqRel);
    if block.is_null() {
        return false;
    }
    // SAFETY: the block came from `System.alloc(RESERVE)` and the swap took
    // it out of SPARE, so it is freed once.
    unsafe { System.dealloc(block, RESERVE) };
    true
}

/// The system allocator, with the reserve behind small allocations.
pub struct WithReserve;

// SAFETY: every method hands the request to `System` unchanged (and at most
// once more after giving the reserve back), so `System`'s guarantees hold.
unsafe impl GlobalAlloc for WithReserve {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller meets `alloc`'s contract, which is System's.
        let block = unsafe { System.alloc(layout) };
        if block.is_null() && layout.size() <= SMALL && give_back() {
            // SAFETY: as above.
            return unsafe { System.alloc(layout) };
        }
        block
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller meets `alloc_zeroed`'s contract, System's.
        let block = unsafe { System.alloc_zeroed(layout) };
        if block.is_null() && layout.size() <= SMALL && give_back() {
            // SAFETY: as above.
            return unsafe { System.alloc_zeroed(layout) };
        }
        block
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller meets `realloc`'s contract, System's; a failed
        // realloc leaves `ptr` as it was, so it may be tried again.
        let block = unsafe { System.realloc(ptr, layout, new_size) };
        if block.is_null() && new_size <= SMALL && give_back() {
            // SAFETY: as above.
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        block
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller meets `dealloc`'s contract, System's.
        unsafe { System.dealloc(ptr, layout) }
    }
}
