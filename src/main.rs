//! `bt2sum`: print or verify BLAKE2 tree-hash checksums. All the work is in
//! the library; see `bt2sum::cli`.

fn main() -> std::process::ExitCode {
    bt2sum::cli::main()
}
