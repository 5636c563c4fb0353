//! The Windows API functions bt2sum calls, declared once, with the
//! structures and constants they take (as the Windows SDK headers define
//! them). Each call's safety argument stands where it is made.

use std::ffi::c_void;
use std::os::windows::io::RawHandle;

/// `FILE_BASIC_INFO`.
#[repr(C)]
#[derive(Default)]
pub(super) struct BasicInfo {
    pub creation_time: i64,
    pub last_access_time: i64,
    pub last_write_time: i64,
    pub change_time: i64,
    pub file_attributes: u32,
}

/// The information class of [`BasicInfo`].
pub(super) const FILE_BASIC_INFO: i32 = 0;

/// What [`GetFileType`] answers for a file on disk.
pub(super) const FILE_TYPE_DISK: u32 = 1;

/// `IO_STATUS_BLOCK`.
#[repr(C)]
#[derive(Default)]
pub(super) struct IoStatusBlock {
    pub status: usize,
    pub information: usize,
}

/// `FILE_FS_DEVICE_INFORMATION`.
#[repr(C)]
#[derive(Default)]
pub(super) struct DeviceInformation {
    pub device_type: u32,
    pub characteristics: u32,
}

/// The information class of [`DeviceInformation`].
pub(super) const FILE_FS_DEVICE_INFORMATION: u32 = 4;

/// `WIN32_MEMORY_RANGE_ENTRY`.
#[repr(C)]
pub(super) struct MemoryRange {
    pub address: *mut c_void,
    pub size: usize,
}

#[link(name = "kernel32")]
unsafe extern "system" {
    pub(super) fn GetFileInformationByHandleEx(
        file: RawHandle,
        class: i32,
        information: *mut BasicInfo,
        size: u32,
    ) -> i32;
    pub(super) fn GetFileType(file: RawHandle) -> u32;
    pub(super) fn GetCurrentProcess() -> *mut c_void;
    pub(super) fn PrefetchVirtualMemory(
        process: *mut c_void,
        count: usize,
        ranges: *const MemoryRange,
        flags: u32,
    ) -> i32;
}

#[link(name = "ntdll")]
unsafe extern "system" {
    pub(super) fn NtQueryVolumeInformationFile(
        file: RawHandle,
        status: *mut IoStatusBlock,
        information: *mut DeviceInformation,
        length: u32,
        class: u32,
    ) -> i32;
}
