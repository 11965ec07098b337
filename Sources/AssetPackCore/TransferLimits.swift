import Foundation
import Synchronization

/// Deadlines, the slowest rate and the TLS trust every HTTP request of a remote pack keeps
/// (docs/REMOTE.md, "Deadlines"). A request that breaks one fails with `.remote`, and the
/// message says which.
///
/// The defaults suit a phone on a poor network: a server that sends fewer than
/// `minimumRate × rateWindow` bytes in any `rateWindow` (4 KiB/s over 10 s), or a request that
/// runs past `requestTimeout`, is given up; so is a fetch whose requests together fall below the
/// minimum rate. Requests are at most about 10 MiB (an install's or an ordinary read's) or
/// 32 MiB (a large streamed read): the deadline alone would need 35 KB/s (110 KB/s) for them, but
/// a request that delivered 1 MiB before it broke a limit is simply continued by the next, so a
/// slow network that keeps moving finishes at any rate above `minimumRate`.
public struct TransferLimits: Sendable, Hashable {
    /// Seconds connecting (name lookup, TCP, TLS) may take.
    public var connectTimeout: TimeInterval = 10
    /// Seconds one request may take, from its start to its last byte.
    public var requestTimeout: TimeInterval = 300
    /// The slowest sustained rate, in bytes per second, averaged over `rateWindow`.
    public var minimumRate: Int = 4096
    /// Seconds over which `minimumRate` is measured (also how long a silent server is waited for).
    public var rateWindow: TimeInterval = 10
    /// A PEM file of the certificate authorities an https server's certificate must chain to,
    /// instead of the system's (a private CA, a staging CDN). `nil`: `CURL_CA_BUNDLE`, then
    /// `SSL_CERT_FILE` and `SSL_CERT_DIR`, then the system's store (docs/REMOTE.md, "TLS").
    public var caCertificates: URL?

    /// The default limits.
    public init() {}

    /// The default limits.
    public static let `default` = TransferLimits()

    /// Creates limits.
    /// - Parameters:
    ///   - connectTimeout: Seconds connecting may take.
    ///   - requestTimeout: Seconds one request may take.
    ///   - minimumRate: The slowest sustained rate, bytes per second.
    ///   - rateWindow: Seconds the rate is averaged over.
    public init(connectTimeout: TimeInterval, requestTimeout: TimeInterval, minimumRate: Int, rateWindow: TimeInterval)
    {
        self.connectTimeout = connectTimeout
        self.requestTimeout = requestTimeout
        self.minimumRate = minimumRate
        self.rateWindow = rateWindow
    }
}

/// A flag that asks blocking work to stop: set by a task's cancellation handler, read by
/// network transfers (libcurl's progress callback) and by threads waiting for bytes.
///
/// Blocking work started from an async API runs on a thread of its own; ``current`` carries
/// the flag there, and code that hands work to further threads passes it on explicitly.
package final class Cancellation: Sendable {
    private let flag = Atomic<Bool>(false)

    package init() {}

    /// Asks the work to stop.
    package func cancel() { flag.store(true, ordering: .releasing) }

    /// Whether ``cancel()`` was called.
    package var isCancelled: Bool { flag.load(ordering: .acquiring) }

    /// Throws `CancellationError` once cancelled.
    package func check() throws {
        if isCancelled { throw CancellationError() }
    }

    /// The cancellation of the work running on this thread (bound by the async entry points).
    @TaskLocal package static var current: Cancellation?

    /// Runs blocking `work` on a global queue with a fresh ``current``, cancelled when the
    /// calling task is: the async face of every blocking API (file and network I/O, KDFs).
    /// - Throws: What `work` throws; `CancellationError` when the task was cancelled before
    ///   the work started.
    package static func offExecutor<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try Task.checkCancellation()
        let cancellation = Cancellation()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                DispatchQueue.global(qos: .userInitiated).async {
                    continuation.resume(
                        with: Result { try Cancellation.$current.withValue(cancellation) { try work() } })
                }
            }
        } onCancel: {
            cancellation.cancel()
        }
    }
}
