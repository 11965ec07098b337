import AssetPackCore
internal import CLibcurl
import Foundation

/// Byte-range GETs of one remote file, pinned to one version of it (docs/REMOTE.md).
///
/// Every response must be `206 Partial Content` starting at the byte asked (a complete shorter
/// one is progress: the rest is asked for next), with the total size, `ETag` (by weak
/// comparison) and `Last-Modified` the first response gave; a changed file is refused as soon as
/// its headers arrive (no body byte is taken). When the first response offered a strong
/// validator, later requests carry it in `If-Range` (a weak one would make a server answer `200`).
/// A server that ignores `Range` is refused the same way; ``fetchWhole(expected:limit:into:)`` is
/// for an install from such a server. Transient failures (connection errors, timeouts, 5xx, 408,
/// 429, a body cut short) are retried with exponential backoff, resuming after the bytes already
/// received. Bodies are streamed to the caller's sink: memory does not grow with the range.
/// Every request keeps ``TransferLimits``: a deadline and a minimum sustained rate, checked by
/// libcurl's progress callback, which also stops a transfer as soon as its ``Cancellation`` is
/// cancelled.
///
/// The transport is libcurl, the system's (docs/REMOTE.md, "Transport", says why not
/// `URLSession` or AsyncHTTPClient). This type is the one user of it. A request runs on the
/// calling thread (`curl_easy_perform`); finished handles are kept for the next request, so
/// their connections are reused.
package final class HTTPRangeClient: @unchecked Sendable {
    /// What identifies one version of the remote file.
    package struct Version: Equatable, Sendable, Codable {
        /// Total size in bytes (from `Content-Range`).
        package var size: UInt64
        /// The `ETag` header, when the server sends one.
        package var etag: String?
        /// The `Last-Modified` header, when the server sends one.
        package var lastModified: String?

        /// Whether `other` is this version: the same size and `Last-Modified`, and the same `ETag`
        /// by weak comparison (RFC 9110 §8.8.3.2: the opaque tags match, `W/` or not). Apache
        /// marks its ETag weak for the second after a change, then sends the same tag strong.
        package func isSame(as other: Version) -> Bool {
            size == other.size && lastModified == other.lastModified && Self.opaque(etag) == Self.opaque(other.etag)
        }

        /// What identifies this version in an install record: the ETag's weak and strong forms
        /// are one version.
        package var fingerprint: String { "\(Self.opaque(etag) ?? "-") \(lastModified ?? "-") \(size)" }

        /// Whether the ETag is weak (`W/"…"`).
        var hasWeakETag: Bool { etag?.hasPrefix("W/") == true }

        /// An ETag without its weak marker.
        static func opaque(_ tag: String?) -> String? {
            guard let tag, tag.hasPrefix("W/") else { return tag }
            return String(tag.dropFirst(2))
        }
    }

    /// Retry policy for transient failures.
    package struct Retry: Sendable {
        /// Attempts per request, the first included.
        package var attempts = 5
        /// The first wait; each later one doubles.
        package var initialDelay = 0.05
        package init() {}
    }

    /// Bytes a failed or short response must deliver not to count as a failed attempt.
    static let progressThatCounts: UInt64 = 1 << 20

    /// The remote file.
    package let url: URL
    package let retry: Retry
    package let limits: TransferLimits
    /// The CA certificates https requests trust (the setting in `limits`, or the environment's).
    let trust: TLSTrust
    // Internal, not private: the response checks (HTTPResponseChecks.swift) and the transport
    // (CurlTransport.swift) are extensions in files of their own.
    let handles = HandlePool()
    let lock = NSLock()
    var pinned: Version?
    private var counters = (requests: 0, bytes: UInt64(0))
    var changed: AssetPackError?
    /// The validator requests carry in `If-Range`: a strong ETag, or with no ETag a
    /// `Last-Modified` that is strong (docs/REMOTE.md, "Consistency"); `nil` sends none.
    var ifRange: String?
    /// A server answered `200` to an `If-Range` request with the pinned validators: it does not
    /// trust them, so no request carries `If-Range` again.
    var ifRangeRefused = false
    var rangeless: Version?
    /// The server requests go to instead of libcurl (tests; ``InMemoryHTTPServer``).
    let inMemory: InMemoryHTTPServer?

    /// - Parameters:
    ///   - url: An `http` or `https` URL.
    ///   - limits: Every request's deadlines and minimum rate.
    ///   - inMemory: Serve every request from this server, not the network (tests).
    package init(
        url: URL, retry: Retry = Retry(), limits: TransferLimits = .default, inMemory: InMemoryHTTPServer? = nil
    ) throws {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil else {
            throw AssetPackError(.invalidArgument, "\(url.absoluteString) is not an http:// or https:// URL")
        }
        self.url = url
        self.retry = retry
        self.limits = limits
        self.inMemory = inMemory
        trust = TLSTrust.resolve(limits.caCertificates)
        try Curl.load()
    }

    /// The version every response so far had (`nil` before the first).
    package var version: Version? { lock.withLock { pinned } }

    /// The error that reported the file changed, once a response showed it.
    package var changeDetected: AssetPackError? { lock.withLock { changed } }

    /// Requests made (retries included) and body bytes received.
    package var transferred: (requests: Int, bytes: UInt64) { lock.withLock { counters } }

    /// The version a server that ignores `Range` announced in the `200` it answered the first
    /// request with (`Content-Length`, `ETag`, `Last-Modified`): set when that request failed with
    /// "the server ignores Range requests". What ``fetchWhole(expected:limit:into:)`` then needs.
    package var ignoredRange: Version? { lock.withLock { rangeless } }

    /// Fetches bytes `range` (clamped to the file's end once its size is known), handing each
    /// piece to `sink(piece, fileOffset)` in order.
    /// - Parameter gathering: Gather pieces into 1 MiB before they go to `sink` (few large
    ///   writes to a file), or hand over each piece as it arrives (a sink that copies anyway).
    /// - Parameter cancellation: Stops the transfer (within about a second) when cancelled.
    /// - Throws: `.remote` (refused or failing server, a changed file, a broken deadline or
    ///   rate), `.integrityFailure` (the file is shorter than the range), `CancellationError`,
    ///   whatever `sink` throws.
    package func fetch(
        _ range: Range<UInt64>, gathering: Bool = true, cancellation: Cancellation? = Cancellation.current,
        into sink: @escaping @Sendable (UnsafeRawBufferPointer, UInt64) throws -> Void
    ) throws {
        var next = range.lowerBound
        var attempt = 0
        let started = DispatchTime.now().uptimeNanoseconds
        while next < range.upperBound {
            try cancellation?.check()
            // The minimum rate holds across the requests of one fetch too: a server that answers
            // each request quickly but with a few bytes (capped 206s, retries) is a drip as well.
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            if elapsed >= limits.rateWindow, Double(next - range.lowerBound) < Double(limits.minimumRate) * elapsed {
                throw AssetPackError(
                    .remote,
                    "\(url.absoluteString): \(Watchdog.Verdict.tooSlow(bytes: Int64(next - range.lowerBound)).describe(limits, seconds: elapsed)) over several requests"
                )
            }
            let (outcome, sentIfRange) = request(
                next..<range.upperBound, gathering: gathering, cancellation: cancellation, sink: sink)
            // Real progress (1 MiB) forgives a failure: a long transfer cut now and then goes
            // on; a server that cuts every body early still fails after `attempts`.
            let progressed = outcome.reached >= next + Self.progressThatCounts
            let moved = outcome.reached > next
            next = max(next, outcome.reached)
            switch outcome.result {
            case .success:
                if next >= range.upperBound { return }
                // The file ends first (the range was clamped to it).
                if let size = version?.size, next >= size { return }
                // A complete 206 shorter than asked (servers and CDNs cap responses, 256 KiB
                // or so): progress, not a failure. Ask for the rest at once.
                if moved { continue }
                fallthrough
            case .failure(.transient):
                if progressed { continue }
                attempt += 1
                guard attempt < retry.attempts else {
                    throw AssetPackError(
                        .remote,
                        "\(url.absoluteString): \(outcome.detail ?? "transfer failed") (after \(attempt) attempts)")
                }
                try Self.pause(retry.initialDelay * Double(1 << (attempt - 1)), cancellation: cancellation)
            case .failure(.slow(let error)):
                // Too slow or past its deadline: worth another request only if this one got
                // somewhere (a long download on a network that dips), never against a drip.
                if progressed { continue }
                throw error
            case .failure(.cancelled):
                throw CancellationError()
            case .failure(.fatal(let error)):
                throw error
            case .failure(.wholeUnchanged):
                // A 200 with the pinned validators. With If-Range, the server did not trust the
                // validator (Apache's weak second, a cautious cache): ask again without it, at
                // once, and never send it again. Without, it ignores Range.
                guard sentIfRange else { throw ignoresRange() }
                lock.withLock {
                    ifRangeRefused = true
                    ifRange = nil
                }
            }
        }
    }

    /// Sleeps `seconds` between attempts, waking early to throw when cancelled.
    private static func pause(_ seconds: TimeInterval, cancellation: Cancellation?) throws {
        let until = Date(timeIntervalSinceNow: seconds)
        while Date() < until {
            try cancellation?.check()
            Thread.sleep(forTimeInterval: min(0.05, max(0, until.timeIntervalSinceNow)))
        }
    }

    /// Downloads the whole file in one plain GET (no `Range`): for an install from a server that
    /// ignores `Range` (docs/REMOTE.md, "Servers without Range"). Pieces go to `sink` in order.
    /// No retry and no resume: a failure means starting over.
    /// - Parameters:
    ///   - expected: The version the server announced before (``ignoredRange``): the response
    ///     must have the same size and validators.
    ///   - limit: Most bytes taken; a larger `Content-Length` is refused before any body byte,
    ///     and no more bytes than the `Content-Length` are ever taken.
    /// - Throws: `.remote` (a failing server, no `Content-Length`, a changed file, a body cut
    ///   short), `.limitExceeded`, whatever `sink` throws.
    package func fetchWhole(
        expected: Version, limit: UInt64, cancellation: Cancellation? = Cancellation.current,
        into sink: @escaping (UnsafeRawBufferPointer, UInt64) throws -> Void
    ) throws {
        let state = WholeState(client: self, expected: expected, limit: limit, sink: sink)
        lock.withLock { counters.requests += 1 }
        // One request for the whole file: its deadline grows with the file at the minimum rate.
        var limits = limits
        limits.requestTimeout = max(limits.requestTimeout, Double(expected.size) / Double(max(1, limits.minimumRate)))
        let transfer = Transfer(whole: state, watchdog: Watchdog(limits, cancellation))
        let result = perform(transfer, url: url, headers: ["Accept-Encoding: identity"])
        if let verdict = transfer.watchdog.verdict {
            if case .cancelled = verdict { throw CancellationError() }
            throw AssetPackError(.remote, "\(url.absoluteString): \(verdict.describe(limits))")
        }
        try state.finish(result, message: transfer.describe(result))
    }

    /// The text of the file at this URL's path plus `suffix` (`<pack>.sha256`), or `nil` when
    /// the server has none: 404 or 403 (what object stores answer for a missing key), or a
    /// body that is not a SHA-256 line.
    /// - Throws: `.remote` for other failures.
    package func sidecar(suffix: String) throws -> String? {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return nil }
        components.path += suffix
        guard let sidecarURL = components.url else { return nil }
        let transfer = Transfer(collectingUpTo: 4096, watchdog: Watchdog(limits, Cancellation.current))
        lock.withLock { counters.requests += 1 }
        let result = perform(transfer, url: sidecarURL, headers: ["Range: bytes=0-4095"])
        if let verdict = transfer.watchdog.verdict {
            if case .cancelled = verdict { throw CancellationError() }
            throw AssetPackError(.remote, "\(sidecarURL.absoluteString): \(verdict.describe(limits))")
        }
        if result != CURLE_OK && !(result == CURLE_WRITE_ERROR && transfer.collected.count >= 4096) {
            throw AssetPackError(.remote, "\(sidecarURL.absoluteString): \(transfer.describe(result))")
        }
        let status = transfer.head?.status ?? 0
        if status == 404 || status == 403 { return nil }
        guard status == 200 || status == 206 else {
            throw AssetPackError(.remote, "\(sidecarURL.absoluteString): HTTP \(status)")
        }
        let text = String(decoding: transfer.collected.prefix(4096), as: UTF8.self)
        let first = text.split(whereSeparator: \.isWhitespace).first.map(String.init) ?? ""
        guard first.count == 64, first.allSatisfy(\.isHexDigit) else { return nil }
        return text
    }

    // MARK: - One request

    enum Failure: Error {
        case transient
        /// The request broke its deadline or the minimum rate.
        case slow(AssetPackError)
        case cancelled
        case fatal(AssetPackError)
        /// A `200` with the pinned version's validators: an `If-Range` not trusted, or `Range`
        /// ignored (``fetch(_:gathering:into:)`` knows which).
        case wholeUnchanged
    }

    struct Outcome {
        var result: Result<Void, Failure>
        /// The file offset up to which bytes were handed to the sink.
        var reached: UInt64
        var detail: String?
    }

    /// One range request. - Returns: Its outcome, and whether it carried `If-Range`.
    private func request(
        _ range: Range<UInt64>, gathering: Bool, cancellation: Cancellation?,
        sink: @escaping @Sendable (UnsafeRawBufferPointer, UInt64) throws -> Void
    ) -> (Outcome, Bool) {
        var headers = ["Range: bytes=\(range.lowerBound)-\(range.upperBound - 1)", "Accept-Encoding: identity"]
        // Only a strong validator: with a weak one a server answers 200 (RFC 9110 §13.1.5).
        // Without If-Range a change still shows: every 206's validators are compared.
        let validator = lock.withLock { ifRange }
        if let validator { headers.append("If-Range: \(validator)") }
        let state = RangeState(
            client: self, start: range.lowerBound, end: range.upperBound, gathering: gathering, sink: sink)
        lock.withLock { counters.requests += 1 }
        let transfer = Transfer(state, watchdog: Watchdog(limits, cancellation))
        let result = perform(transfer, url: url, headers: headers)
        state.complete(result, message: transfer.describe(result), verdict: transfer.watchdog.verdict)
        return (state.outcome(), validator != nil)
    }

    /// Counts body bytes received (the request states call it).
    func count(bytes: Int) { lock.withLock { counters.bytes += UInt64(bytes) } }
}
