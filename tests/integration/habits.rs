//! The options users bring from GNU coreutils and b3sum, as they expect
//! them to work.

use super::{run, status, stderr, stdout};

/// `--tag` is the default, as `b2sum --tag` prints; beside `--untagged` the
/// last one wins, as in GNU `cksum`; it means nothing when checking.
#[test]
fn tag_is_the_default_and_the_last_of_tag_and_untagged_wins() {
    let tagged = stdout(&run(Vec::<&str>::new(), b"hi"));
    assert!(tagged.starts_with("BLAKE2b-64 = "), "{tagged}");
    let untagged = stdout(&run(["--untagged", "-"], b"hi"));
    assert!(untagged.ends_with("  -\n"), "{untagged}");
    for (args, expected) in [
        (&["--tag"][..], &tagged),
        (&["--untagged", "--tag"], &tagged),
        (&["--tag", "--untagged", "-"], &untagged),
        (&["--tag", "--tag"], &tagged),
    ] {
        let out = run(args, b"hi");
        assert_eq!((&stdout(&out), status(&out)), (expected, 0), "{args:?}");
    }
    // Tagged lines are what a leaf listing prints anyway.
    let out = run(["--untagged", "--tag", "--leaves"], b"hi");
    assert_eq!(status(&out), 0, "{}", stderr(&out));
    let out = run(["-c", "--tag"], b"");
    assert_eq!(status(&out), 2);
}

/// `-a` takes the algorithm's name in any case: `BLAKE2b`, as lines spell
/// it, too.
#[test]
fn the_algorithm_is_named_in_any_case() {
    let lower = stdout(&run(["-a", "blake2s"], b"hi"));
    for spelled in ["BLAKE2s", "BLAKE2S", "Blake2s"] {
        let out = run(["-a", spelled], b"hi");
        assert_eq!(
            (stdout(&out), status(&out)),
            (lower.clone(), 0),
            "{spelled}"
        );
    }
    assert_eq!(status(&run(["-a", "blake3"], b"hi")), 2);
}
