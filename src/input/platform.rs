//! What opening and reading need from the operating system: what an open
//! file is, whether it is safe to map, opening a FIFO without waiting for
//! its writer, and wider pipes; and for the signal handlers, `errno` kept
//! across them and a pipe to wake a thread from one.
//! (Windows has no FIFO that opening waits on, and its pipes keep their
//! size: there the file is opened as it is, and read in large blocks.)

use std::fs::{File, Metadata};
use std::io;
use std::path::Path;

/// The calling thread's `errno`, put back when this is dropped: a signal
/// handler keeps it for the code it interrupted, which may be about to
/// read it, while the handler's own system calls may change it.
#[cfg(unix)]
pub(super) struct SavedErrno(libc::c_int);

#[cfg(unix)]
impl SavedErrno {
    pub(super) fn save() -> SavedErrno {
        // SAFETY: the location is the calling thread's own `errno`.
        SavedErrno(unsafe { *errno_location() })
    }
}

#[cfg(unix)]
impl Drop for SavedErrno {
    fn drop(&mut self) {
        // SAFETY: as in `save`.
        unsafe { *errno_location() = self.0 };
    }
}

/// Where the calling thread's `errno` lives.
#[cfg(unix)]
pub(super) fn errno_location() -> *mut libc::c_int {
    // SAFETY: these take no arguments and return the calling thread's
    // `errno` location.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    return unsafe { libc::__errno_location() };
    #[cfg(any(target_vendor = "apple", target_os = "freebsd"))]
    return unsafe { libc::__error() };
}

/// A duplicate of standard input's descriptor (handle), which shares its
/// offset: hashing reads from where it stands.
pub fn duplicate_stdin() -> io::Result<File> {
    #[cfg(unix)]
    return Ok(File::from(
        std::os::fd::AsFd::as_fd(&io::stdin()).try_clone_to_owned()?,
    ));
    #[cfg(windows)]
    return Ok(File::from(
        std::os::windows::io::AsHandle::as_handle(&io::stdin()).try_clone_to_owned()?,
    ));
}

/// What tells that a regular file changed: its size, its modification
/// time, its change time (set by every write, truncation and time change,
/// and which no call can set back, unlike the modification time that
/// `futimens` restores), and which file it is. A file hashed is stamped
/// before and after; a file written after a check (a repair) must still
/// have the stamp the check saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Stamp {
    pub(super) len: u64,
    modified: Option<std::time::SystemTime>,
    /// Seconds and nanoseconds (on Windows, 100-nanosecond ticks).
    changed: (i64, i64),
    identity: crate::sys::FileId,
}

impl Stamp {
    /// The stamp of an open regular file, from what `fstat` said of it.
    pub(super) fn of(file: &File, metadata: &Metadata) -> io::Result<Stamp> {
        #[cfg(unix)]
        let changed = {
            use std::os::unix::fs::MetadataExt;
            (metadata.ctime(), metadata.ctime_nsec())
        };
        #[cfg(windows)]
        let changed = (change_time(file)?, 0);
        Ok(Stamp {
            len: metadata.len(),
            modified: metadata.modified().ok(),
            changed,
            identity: crate::sys::FileId::of(file, metadata)?,
        })
    }

    /// The file's modification time, where the system gives it.
    pub fn modified(&self) -> Option<std::time::SystemTime> {
        self.modified
    }

    /// The file's size.
    pub fn size(&self) -> u64 {
        self.len
    }

    /// The stamp of an open regular file now.
    pub fn now(file: &File) -> io::Result<Stamp> {
        Stamp::of(file, &file.metadata()?)
    }

    /// The stamp to compare with once the file is read: the one `fstat`
    /// gave when it was opened, or, if the file changed less than a clock
    /// tick before, a later one that every change to come will alter.
    ///
    /// The system sets the change time from a clock that moves a tick at a
    /// time (1 to 16 ms; seconds on file systems that keep whole seconds),
    /// and a change made within the tick of the last one can
    /// leave the change time as it was. Linux 6.13 and later make the
    /// change after an `fstat` finer on ext4, XFS, Btrfs and tmpfs, but not
    /// on other file systems or older kernels. So when the change time is
    /// within a tick of now, bt2sum waits for the tick to pass and takes
    /// the stamp again, before it reads a byte. This costs a file written
    /// in the last few milliseconds that wait, and any other file nothing.
    pub(super) fn settled(file: &File, metadata: &Metadata) -> io::Result<Stamp> {
        let mut stamp = Stamp::of(file, metadata)?;
        // A file changed in every tick is caught by the stamp after it is
        // read (its next change moves the change time), so a few rounds do.
        for _ in 0..3 {
            let Some(wait) = stamp.unsettled(std::time::SystemTime::now()) else {
                break;
            };
            std::thread::sleep(wait);
            stamp = Stamp::now(file)?;
        }
        Ok(stamp)
    }

    /// How long after `now` the clock is a tick past the change time, if
    /// it is not yet; `None` also for a change time more than two ticks
    /// ahead of `now`, which is another machine's clock (a network file
    /// system's server), not to be waited for.
    fn unsettled(&self, now: std::time::SystemTime) -> Option<std::time::Duration> {
        let tick = self.tick();
        let settled_at = self.change_time()? + tick;
        settled_at
            .duration_since(now)
            .ok()
            .filter(|wait| *wait <= 2 * tick)
    }

    /// The change time, as a time of the system clock.
    fn change_time(&self) -> Option<std::time::SystemTime> {
        let (seconds, fraction) = self.changed;
        #[cfg(unix)]
        let since_epoch =
            std::time::Duration::new(u64::try_from(seconds).ok()?, u32::try_from(fraction).ok()?);
        // 100-nanosecond ticks since 1601, 11,644,473,600 s before 1970.
        #[cfg(windows)]
        let since_epoch = {
            let _ = fraction;
            let ticks = u64::try_from(seconds)
                .ok()?
                .checked_sub(116_444_736_000_000_000)?;
            std::time::Duration::from_nanos(ticks.checked_mul(100)?)
        };
        std::time::UNIX_EPOCH.checked_add(since_epoch)
    }

    /// The tick of the clock that set the change time: two seconds if the
    /// change time is a whole second (a file system that keeps no fraction,
    /// FAT only even seconds), else the system's.
    fn tick(&self) -> std::time::Duration {
        #[cfg(unix)]
        let whole_second = self.changed.1 == 0;
        #[cfg(windows)]
        let whole_second = self.changed.0 % 10_000_000 == 0;
        if whole_second {
            std::time::Duration::from_secs(2)
        } else {
            clock_tick()
        }
    }
}

/// The tick of the clock file times are set from: on Linux, the coarse
/// clock's (one jiffy, 1 to 10 ms); on Windows the timer's default
/// 15.6 ms; elsewhere 10 ms, the longest of the BSDs' and macOS's.
fn clock_tick() -> std::time::Duration {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        static TICK: std::sync::OnceLock<std::time::Duration> = std::sync::OnceLock::new();
        *TICK.get_or_init(|| {
            let mut resolution = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // SAFETY: fills a valid timespec.
            let known =
                unsafe { libc::clock_getres(libc::CLOCK_REALTIME_COARSE, &mut resolution) } == 0;
            let tick = std::time::Duration::new(
                u64::try_from(resolution.tv_sec).unwrap_or(0),
                u32::try_from(resolution.tv_nsec).unwrap_or(0),
            );
            if known && !tick.is_zero() && tick <= std::time::Duration::from_secs(1) {
                tick
            } else {
                std::time::Duration::from_millis(10)
            }
        })
    }
    #[cfg(windows)]
    return std::time::Duration::from_micros(15_625);
    #[cfg(not(any(target_os = "linux", target_os = "android", windows)))]
    return std::time::Duration::from_millis(10);
}

/// The change time of an open file (`FILE_BASIC_INFO.ChangeTime`, in
/// 100-nanosecond ticks), which no call sets back as one can the
/// modification time.
#[cfg(windows)]
fn change_time(file: &File) -> io::Result<i64> {
    use super::win32::{BasicInfo, FILE_BASIC_INFO, GetFileInformationByHandleEx};
    use std::os::windows::io::AsRawHandle;

    let mut info = BasicInfo::default();
    // SAFETY: the handle is open for the call, and `info` is a live
    // `FILE_BASIC_INFO` of the size given.
    let done = unsafe {
        GetFileInformationByHandleEx(
            file.as_raw_handle(),
            FILE_BASIC_INFO,
            &mut info,
            size_of::<BasicInfo>() as u32,
        )
    };
    if done == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(info.change_time)
}

/// What `fstat` says of an open file.
#[cfg(unix)]
pub(super) fn metadata(file: &File) -> io::Result<Option<Metadata>> {
    file.metadata().map(Some)
}

/// What the system says of an open file; `None` for a pipe or a character
/// device (a console, `NUL`), or a file that cannot say: a stream, read to
/// its end. (`File::metadata`, `GetFileInformationByHandle`, fails on a
/// pipe with "Incorrect function", so it is not asked.)
#[cfg(windows)]
pub(super) fn metadata(file: &File) -> io::Result<Option<Metadata>> {
    use super::win32::{FILE_TYPE_DISK, GetFileType};
    use std::os::windows::io::AsRawHandle;

    // SAFETY: GetFileType only reads the type of a handle that is open for
    // the call (it answers FILE_TYPE_UNKNOWN for one it cannot tell).
    if unsafe { GetFileType(file.as_raw_handle()) } != FILE_TYPE_DISK {
        return Ok(None);
    }
    // A disk file's handle that cannot say what it is (Wine's standard
    // input redirected from a Unix file answers "Invalid handle") is still
    // readable: it is read to its end as a stream, without the size or
    // the check for changes.
    Ok(file.metadata().ok())
}

/// Whether `file` is on a file system whose sizes are placeholders, not
/// what its files hold: Linux's pseudo file systems (sysfs gives 4096 for
/// a line of text). Their files hold what reading them gives.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(super) fn sizes_are_placeholders(file: &File) -> bool {
    use std::os::fd::AsRawFd;
    // From linux/magic.h: sysfs, proc, debugfs, tracefs, securityfs,
    // configfs, cgroup and cgroup2.
    const PSEUDO: [i64; 8] = [
        0x6265_6572,
        0x9fa0,
        0x6462_6720,
        0x7472_6163,
        0x7363_6673,
        0x6265_6570,
        0x0027_e0eb,
        0x6367_7270,
    ];
    // SAFETY: zeroed is a valid statfs to be filled in.
    let mut stat: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: the descriptor is open for the call; `stat` is a valid statfs.
    if unsafe { libc::fstatfs(file.as_raw_fd(), &mut stat) } != 0 {
        return false;
    }
    #[allow(clippy::unnecessary_cast)]
    PSEUDO.contains(&(stat.f_type as i64))
}

/// Whether `file` is on a file system whose sizes are placeholders: none
/// known here.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
pub(super) fn sizes_are_placeholders(_file: &File) -> bool {
    false
}

/// Whether a regular file may be mapped: everywhere but on Windows, where
/// a mapped view of a file on a network share or a removable drive ends
/// the process on an I/O error (`EXCEPTION_IN_PAGE_ERROR`); such a file
/// is read instead. (Unix turns the same failure into `EIO` through the
/// SIGBUS guard.)
#[cfg(unix)]
pub(super) fn safe_to_map(_file: &File) -> bool {
    true
}

/// Whether a regular file may be mapped: not if its volume is remote or
/// removable, as the system describes the device it is on
/// (`FileFsDeviceInformation`); if the system cannot say, not either.
#[cfg(windows)]
pub(super) fn safe_to_map(file: &File) -> bool {
    use super::win32::{
        DeviceInformation, FILE_FS_DEVICE_INFORMATION, IoStatusBlock, NtQueryVolumeInformationFile,
    };
    use std::os::windows::io::AsRawHandle;

    let mut status = IoStatusBlock::default();
    let mut device = DeviceInformation::default();
    // SAFETY: the handle is open for the call, and the two structures are
    // live and laid out as the call writes them (`IO_STATUS_BLOCK`,
    // `FILE_FS_DEVICE_INFORMATION`), the second of the length given.
    let result = unsafe {
        NtQueryVolumeInformationFile(
            file.as_raw_handle(),
            &mut status,
            &mut device,
            size_of::<DeviceInformation>() as u32,
            FILE_FS_DEVICE_INFORMATION,
        )
    };
    result >= 0 && local_fixed_device(device.device_type, device.characteristics)
}

/// Whether a device, as `FILE_FS_DEVICE_INFORMATION` describes it, is a
/// local, fixed one: not a network file system, not a CD or DVD, not
/// remote, removable or a floppy disk.
#[cfg(windows)]
fn local_fixed_device(device_type: u32, characteristics: u32) -> bool {
    const FILE_DEVICE_CD_ROM: u32 = 0x02;
    const FILE_DEVICE_CD_ROM_FILE_SYSTEM: u32 = 0x03;
    const FILE_DEVICE_DFS: u32 = 0x06;
    const FILE_DEVICE_DVD: u32 = 0x33;
    const FILE_DEVICE_NETWORK: u32 = 0x12;
    const FILE_DEVICE_NETWORK_FILE_SYSTEM: u32 = 0x14;
    const FILE_DEVICE_NETWORK_REDIRECTOR: u32 = 0x28;
    const FILE_REMOVABLE_MEDIA: u32 = 0x01;
    const FILE_FLOPPY_DISKETTE: u32 = 0x04;
    const FILE_REMOTE_DEVICE: u32 = 0x10;
    let remote_or_removable = matches!(
        device_type,
        FILE_DEVICE_CD_ROM
            | FILE_DEVICE_CD_ROM_FILE_SYSTEM
            | FILE_DEVICE_DFS
            | FILE_DEVICE_DVD
            | FILE_DEVICE_NETWORK
            | FILE_DEVICE_NETWORK_FILE_SYSTEM
            | FILE_DEVICE_NETWORK_REDIRECTOR
    ) || characteristics
        & (FILE_REMOVABLE_MEDIA | FILE_FLOPPY_DISKETTE | FILE_REMOTE_DEVICE)
        != 0;
    !remote_or_removable
}

/// Opens `path` for reading.
#[cfg(windows)]
pub(super) fn open_for_reading(path: &Path) -> io::Result<File> {
    File::open(path)
}

/// Nothing to wait for.
#[cfg(windows)]
pub(super) fn wait_for_writer(_file: &File) -> io::Result<()> {
    Ok(())
}

/// Reads already wait.
#[cfg(windows)]
pub(super) fn wait_when_reading(_file: &File) -> io::Result<()> {
    Ok(())
}

/// Opens `path` for reading without waiting: opening a FIFO waits for a
/// writer, and a FIFO is opened where inputs are prepared, on a pool thread
/// that others may wait for. The file is then non-blocking until
/// [`wait_when_reading`] (after [`wait_for_writer`] for a FIFO).
#[cfg(unix)]
pub(super) fn open_for_reading(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

/// Waits until a FIFO opened by [`open_for_reading`] has had a writer: before
/// that, a read would find it at its end. Anything else returns at once.
#[cfg(unix)]
pub(super) fn wait_for_writer(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileTypeExt;
    if !file.metadata()?.file_type().is_fifo() {
        return Ok(());
    }
    let mut waiting = libc::pollfd {
        fd: file.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // A FIFO polls readable once a writer has written, and hung up once a
    // writer has come and gone; until then poll waits.
    loop {
        // SAFETY: one valid pollfd, for a descriptor open for the call.
        if unsafe { libc::poll(&mut waiting, 1, -1) } >= 0 {
            return Ok(());
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// Makes reads of a file opened by [`open_for_reading`] wait for data again.
#[cfg(unix)]
pub(super) fn wait_when_reading(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: F_GETFL and F_SETFL only read and set the status flags of a
    // descriptor that is open for the calls.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Asks for a bigger buffer on a pipe or FIFO (64 KiB by default), so that
/// the writer and bt2sum wake each other less often. Best effort: refused or
/// not a pipe, nothing changes.
#[cfg(target_os = "linux")]
pub(super) fn widen_pipe(file: &File) {
    use std::os::fd::AsRawFd;
    /// 1 MiB: the writer and bt2sum wake each other 16 times less often
    /// than with the 64 KiB default.
    const PIPE_SIZE: libc::c_int = 1 << 20;
    use std::os::unix::fs::FileTypeExt;
    if file.metadata().is_ok_and(|meta| meta.file_type().is_fifo()) {
        // SAFETY: F_SETPIPE_SZ takes an int and only resizes the pipe's
        // buffer; the descriptor is valid for the life of `file`.
        unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_SIZE) };
    }
}

/// Pipes keep their size where it cannot be changed.
#[cfg(not(target_os = "linux"))]
pub(super) fn widen_pipe(_file: &File) {}

#[cfg(all(test, windows))]
mod tests {
    use super::*;

    /// A file on a local disk is mapped; the devices of shares, CDs, DVDs
    /// and removable drives are not.
    #[test]
    fn only_local_fixed_devices_are_mapped() {
        let (_dir, path) = crate::input::temp_file("local", b"bytes");
        assert!(safe_to_map(&File::open(&path).unwrap()));
        // (device type, characteristics, mapped)
        let table = [
            (0x07, 0x00, true),  // a disk
            (0x08, 0x00, true),  // a disk file system
            (0x07, 0x20, true),  // a disk, device mounted (not removable)
            (0x07, 0x01, false), // a removable disk
            (0x07, 0x04, false), // a floppy disk
            (0x07, 0x10, false), // a remote device
            (0x02, 0x00, false), // a CD
            (0x03, 0x00, false), // a CD file system
            (0x33, 0x00, false), // a DVD
            (0x14, 0x00, false), // a network file system
            (0x12, 0x10, false), // a network device
            (0x28, 0x00, false), // a network redirector
            (0x06, 0x00, false), // a distributed file system
        ];
        for (device_type, characteristics, mapped) in table {
            assert_eq!(
                local_fixed_device(device_type, characteristics),
                mapped,
                "{device_type:#x} {characteristics:#x}"
            );
        }
    }
}

#[cfg(all(test, unix))]
mod signal_tests {
    use super::*;

    #[test]
    fn errno_is_given_back() {
        // SAFETY: the calling thread's own errno.
        unsafe { *errno_location() = libc::EDOM };
        {
            let _saved = SavedErrno::save();
            // SAFETY: as above.
            unsafe { *errno_location() = libc::EAGAIN };
        }
        // SAFETY: as above.
        assert_eq!(unsafe { *errno_location() }, libc::EDOM);
    }
}

#[cfg(test)]
mod stamp_tests {
    use super::*;
    use std::io::{Seek, SeekFrom, Write};
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    /// Bytes written in place, then the size and modification time put
    /// back: the stamp still tells, by the change time.
    #[test]
    fn a_write_with_its_times_restored_changes_the_stamp() {
        let (_dir, path) = crate::input::temp_file("file", b"original bytes");
        let file = File::open(&path).unwrap();
        let before = Stamp::now(&file).unwrap();
        assert_eq!(Stamp::now(&file).unwrap(), before);
        let modified = file.metadata().unwrap().modified().unwrap();
        std::thread::sleep(Duration::from_millis(20));
        let mut writer = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        writer.seek(SeekFrom::Start(0)).unwrap();
        writer.write_all(b"changed").unwrap();
        writer
            .set_times(std::fs::FileTimes::new().set_modified(modified))
            .unwrap();
        drop(writer);
        let after = Stamp::now(&file).unwrap();
        assert_eq!(after.len, before.len);
        assert_eq!(file.metadata().unwrap().modified().unwrap(), modified);
        assert_ne!(after, before);
    }

    /// A stamp whose change time is `ago` before `now` (negative: ahead).
    fn changed_at(now: SystemTime, ago: i64, fraction_of_second: bool) -> Stamp {
        let nanos = now.duration_since(UNIX_EPOCH).unwrap().as_nanos() as i64 - ago;
        let seconds = nanos.div_euclid(1_000_000_000);
        let nanos = match nanos.rem_euclid(1_000_000_000) {
            _ if !fraction_of_second => 0,
            0 => 1,
            nanos => nanos,
        };
        #[cfg(unix)]
        let changed = (seconds, nanos);
        #[cfg(windows)]
        let changed = ((seconds + 11_644_473_600) * 10_000_000 + nanos / 100, 0);
        Stamp {
            len: 0,
            modified: None,
            changed,
            identity: crate::sys::FileId::default(),
        }
    }

    /// A file changed within a tick of now is waited for until the clock
    /// is a tick past its change; one changed longer ago, or by a clock far
    /// ahead of ours, is not.
    #[test]
    fn a_change_within_a_tick_is_waited_for() {
        let now = SystemTime::now();
        let tick = clock_tick();
        let ms = 1_000_000;
        let fresh = changed_at(now, ms / 2, true);
        let wait = fresh
            .unsettled(now)
            .expect("changed half a millisecond ago");
        let within_a_millisecond = wait + Duration::from_millis(1) >= tick;
        assert!(wait <= tick && within_a_millisecond, "{wait:?}");
        let old = changed_at(now, tick.as_nanos() as i64 + ms, true);
        assert_eq!(old.unsettled(now), None);
        let ahead = changed_at(now, -(3 * tick.as_nanos() as i64), true);
        assert_eq!(ahead.unsettled(now), None);
        // Whole seconds: a file system that keeps no fraction (FAT: even
        // seconds) is given two.
        let whole = changed_at(now, 0, false);
        let wait = whole.unsettled(now).expect("changed this second");
        assert!(wait > Duration::from_secs(1), "{wait:?}");
        assert!(wait <= Duration::from_secs(2), "{wait:?}");
    }

    /// The settled stamp of a file just written is one that a write right
    /// after it changes, whatever the clock's tick. (Linux 6.13 and later
    /// see to this themselves on ext4, XFS, Btrfs and tmpfs; on older
    /// kernels, macOS, FreeBSD and Windows a stamp taken in the tick of the
    /// write, not settled, fails this.)
    #[test]
    fn a_write_just_after_a_settled_stamp_changes_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("file");
        for round in 0..20 {
            std::fs::write(&path, b"original").unwrap();
            let file = File::open(&path).unwrap();
            let before = Stamp::settled(&file, &file.metadata().unwrap()).unwrap();
            std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .unwrap()
                .write_all(b"changed!")
                .unwrap();
            assert_ne!(Stamp::now(&file).unwrap(), before, "round {round}");
        }
    }
}
