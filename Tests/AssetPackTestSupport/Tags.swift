import Testing

extension Tag {
    /// The suites and tests `make test` (the fast tier) leaves to `make test-full`: seeded and
    /// size sweeps, byte-flip and truncation loops, interrupt and crash loops, real and faulty
    /// servers, interop with other tools. `scripts/slow-tests.py` turns the tag into `swift test
    /// --skip` patterns, as Swift 6.3's `swift test` cannot skip by tag.
    @Tag public static var slow: Self
}
