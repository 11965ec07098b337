import Foundation
import Testing

/// Which tests a test process runs: `ASSETPACK_TESTS=fast` (what `make test` sets) leaves out the
/// slow tier; unset, or anything else, runs every test (`swift test`, `make test-full`).
public enum TestTier: Sendable {
    case fast, all

    /// The tier this process runs, from `ASSETPACK_TESTS`.
    public static let current: TestTier =
        ProcessInfo.processInfo.environment["ASSETPACK_TESTS"] == "fast" ? .fast : .all
}

extension Trait where Self == ConditionTrait {
    /// The slow tier: seeded and size sweeps, byte-flip and truncation loops, interrupt and crash
    /// loops, real and faulty servers, interop with other tools. A condition, not a tag: the fast
    /// tier (`make test`, `ASSETPACK_TESTS=fast`) reports these as skipped, with this reason.
    public static var slow: Self {
        .enabled(if: TestTier.current == .all, "the slow tier: make test-full runs it (ASSETPACK_TESTS=fast skips it)")
    }
}
