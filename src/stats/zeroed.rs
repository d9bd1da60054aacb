//! Arrays of counters that cost memory only where they are written.
//!
//! A latency histogram has some 28,000 counters, of which a run writes a
//! few hundred, clustered. Each thread keeps one per distribution and per
//! script, so with many threads and scripts the arrays add up to gigabytes
//! if every page of them is resident. A `Vec` from `calloc` is not enough:
//! glibc carves blocks of this size out of its heap once a block of that
//! size has been freed (its dynamic mmap threshold), and clears them with
//! `memset`, which makes every page resident. These arrays are mapped
//! straight from the kernel instead, as anonymous zero pages: a page
//! becomes resident when a counter on it is first incremented (with
//! transparent huge pages refused for them, which would make 2 MiB
//! resident at a time). They are still reserved in full: under strict
//! overcommit (`vm.overcommit_memory=2`) they count as much as before.

use std::alloc::Layout;
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

/// A fixed-length array of `u64`, zero at first, mapped on demand.
pub struct ZeroedCounts {
    ptr: NonNull<u64>,
    len: usize,
}

// SAFETY: the mapping is owned by this value alone, as a Box's memory is.
unsafe impl Send for ZeroedCounts {}
// SAFETY: shared access only reads, through `&[u64]`.
unsafe impl Sync for ZeroedCounts {}

impl ZeroedCounts {
    /// `len` zeros.
    pub fn new(len: usize) -> Self {
        let layout = Layout::array::<u64>(len.max(1)).expect("counter array size");
        // SAFETY: an anonymous private mapping of a non-zero size, with no
        // address hint; the result is checked below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                layout.size(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            std::alloc::handle_alloc_error(layout);
        }
        // Where transparent huge pages are always on, the kernel merges
        // neighbouring mappings and backs a first write with 2 MiB at
        // once; small pages keep the cost at what is written. Advice only:
        // a kernel without it changes nothing.
        // SAFETY: advises on the mapping just made, of that size.
        unsafe { libc::madvise(ptr, layout.size(), libc::MADV_NOHUGEPAGE) };
        let ptr = NonNull::new(ptr.cast::<u64>())
            .unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        ZeroedCounts { ptr, len }
    }

    fn bytes(&self) -> usize {
        self.len.max(1) * std::mem::size_of::<u64>()
    }
}

impl Deref for ZeroedCounts {
    type Target = [u64];
    fn deref(&self) -> &[u64] {
        // SAFETY: the mapping holds `len` initialized (zero-filled) u64s
        // for as long as `self` lives.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for ZeroedCounts {
    fn deref_mut(&mut self) -> &mut [u64] {
        // SAFETY: as in `deref`, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for ZeroedCounts {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `new`, once.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.bytes()) };
    }
}

impl Clone for ZeroedCounts {
    /// Copies only the counters that are not zero, so the copy is
    /// resident where the original was written.
    fn clone(&self) -> Self {
        let mut copy = ZeroedCounts::new(self.len);
        for (to, &from) in copy.iter_mut().zip(self.iter()) {
            if from != 0 {
                *to = from;
            }
        }
        copy
    }
}

impl PartialEq for ZeroedCounts {
    fn eq(&self, other: &Self) -> bool {
        self[..] == other[..]
    }
}

impl Eq for ZeroedCounts {}

impl fmt::Debug for ZeroedCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let written = self.iter().filter(|&&n| n != 0).count();
        write!(
            f,
            "ZeroedCounts {{ len: {}, non-zero: {written} }}",
            self.len
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_at_zero_and_clones_what_was_written() {
        let mut a = ZeroedCounts::new(30_000);
        assert!(a.iter().all(|&n| n == 0));
        a[7] = 3;
        a[29_999] = 1;
        let b = a.clone();
        assert_eq!(a, b);
        assert_eq!(b[7], 3);
        assert_eq!(b.iter().sum::<u64>(), 4);
        assert_eq!(ZeroedCounts::new(0).len(), 0);
    }
}
