use super::key_of;

#[test]
fn keys_are_the_prefix_and_ten_digits_at_least() {
    for i in [
        0,
        7,
        10,
        99,
        1_234_567_890,
        9_999_999_999,
        10_000_000_000,
        u64::MAX,
    ] {
        assert_eq!(key_of("w/p-", i), format!("w/p-{i:010}"));
    }
    for i in (0..100_000u64).step_by(7) {
        assert_eq!(key_of("", i), format!("{i:010}"));
    }
}
