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
    private let handles = HandlePool()
    private let lock = NSLock()
    private var pinned: Version?
    private var counters = (requests: 0, bytes: UInt64(0))
    private var changed: AssetPackError?
    /// The validator requests carry in `If-Range`: a strong ETag, or with no ETag a
    /// `Last-Modified` that is strong (docs/REMOTE.md, "Consistency"); `nil` sends none.
    private var ifRange: String?
    /// A server answered `200` to an `If-Range` request with the pinned validators: it does not
    /// trust them, so no request carries `If-Range` again.
    private var ifRangeRefused = false
    private var rangeless: Version?

    /// - Parameters:
    ///   - url: An `http` or `https` URL.
    ///   - limits: Every request's deadlines and minimum rate.
    package init(url: URL, retry: Retry = Retry(), limits: TransferLimits = .default) throws {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil else {
            throw AssetPackError(.invalidArgument, "\(url.absoluteString) is not an http:// or https:// URL")
        }
        self.url = url
        self.retry = retry
        self.limits = limits
        Curl.initializeOnce()
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
        try state.finish(result)
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
            throw AssetPackError(.remote, "\(sidecarURL.absoluteString): \(Curl.describe(result))")
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
        state.complete(result, verdict: transfer.watchdog.verdict)
        return (state.outcome(), validator != nil)
    }

    /// The `If-Range` validator for `version`, first seen in a response dated `date`: a strong
    /// ETag; with no ETag at all, a `Last-Modified` at least 60 s older than the response's
    /// `Date` (RFC 9110 §8.8.2.2; Apache treats a date less than a second old as weak); else none.
    static func ifRangeValidator(for version: Version, date: String?) -> String? {
        if let etag = version.etag { return version.hasWeakETag ? nil : etag }
        guard let modified = version.lastModified, let date else { return nil }
        let lastModified = curl_getdate(modified, nil)
        let sent = curl_getdate(date, nil)
        guard lastModified > 0, sent > 0, sent - lastModified >= 60 else { return nil }
        return modified
    }

    /// Runs one GET on the calling thread with a pooled handle.
    private func perform(_ transfer: Transfer, url: URL, headers: [String]) -> CURLcode {
        let handle = handles.take()
        defer { handles.give(handle) }
        var list: UnsafeMutablePointer<curl_slist>?
        for header in headers { list = curl_slist_append(list, header) }
        defer { curl_slist_free_all(list) }
        let box = Unmanaged.passRetained(transfer)
        defer { box.release() }
        let connectMilliseconds = max(1, Int((limits.connectTimeout * 1000).rounded(.up)))
        // Options that fail to set leave libcurl's default; the transfer then reports what failed.
        _ = assetpack_curl_setopt_string(handle, CURLOPT_URL, url.absoluteString)
        _ = assetpack_curl_setopt_pointer(handle, CURLOPT_HTTPHEADER, UnsafeMutableRawPointer(list))
        _ = assetpack_curl_setopt_string(handle, CURLOPT_PROTOCOLS_STR, "http,https")
        // An https pack is never redirected to plain http.
        _ = assetpack_curl_setopt_string(
            handle, CURLOPT_REDIR_PROTOCOLS_STR, url.scheme?.lowercased() == "https" ? "https" : "http,https")
        // Through an https proxy, the proxy's own "200 Connection established" is not the answer.
        _ = assetpack_curl_setopt_long(handle, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1)
        _ = assetpack_curl_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 1)
        _ = assetpack_curl_setopt_long(handle, CURLOPT_MAXREDIRS, 5)
        _ = assetpack_curl_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        _ = assetpack_curl_setopt_long(handle, CURLOPT_CONNECTTIMEOUT_MS, connectMilliseconds)
        // The deadline, the minimum rate and cancellation: checked on every piece and, with
        // nothing arriving, about once a second.
        _ = assetpack_curl_setopt_long(handle, CURLOPT_NOPROGRESS, 0)
        _ = assetpack_curl_setopt_xferinfo(handle, Transfer.onProgress)
        _ = assetpack_curl_setopt_pointer(handle, CURLOPT_XFERINFODATA, box.toOpaque())
        _ = assetpack_curl_setopt_long(handle, CURLOPT_BUFFERSIZE, Curl.bufferSize)
        _ = assetpack_curl_setopt_callback(handle, CURLOPT_HEADERFUNCTION, Transfer.onHeader)
        _ = assetpack_curl_setopt_pointer(handle, CURLOPT_HEADERDATA, box.toOpaque())
        _ = assetpack_curl_setopt_callback(handle, CURLOPT_WRITEFUNCTION, Transfer.onBody)
        _ = assetpack_curl_setopt_pointer(handle, CURLOPT_WRITEDATA, box.toOpaque())
        return curl_easy_perform(handle)
    }

    /// Checks a response's status and headers against the request and the pinned version.
    fileprivate func accept(_ response: ResponseHead, start: UInt64, end: UInt64) -> Failure? {
        let where_ = url.absoluteString
        switch response.status {
        case 206: break
        case 200:
            if version != nil {
                guard hasChanged(response) else { return .wholeUnchanged }
                let error = AssetPackError(.remote, "\(where_) changed while it was being read (\(describe(response)))")
                lock.withLock { changed = error }
                return .fatal(error)
            }
            let announced = Version(
                size: response["Content-Length"].flatMap { UInt64($0) } ?? 0, etag: response["ETag"],
                lastModified: response["Last-Modified"])
            lock.withLock { rangeless = announced }
            return .fatal(ignoresRange())
        case 416:
            // Without If-Range, a file that shrank answers 416: its new size shows the change.
            if let pinned = version, let total = response["Content-Range"].flatMap(Self.unsatisfiedTotal),
                total != pinned.size
            {
                let error = AssetPackError(
                    .remote, "\(where_) changed while it was being read (was \(pinned.size) bytes; now \(total))")
                lock.withLock { changed = error }
                return .fatal(error)
            }
            return .fatal(AssetPackError(.integrityFailure, "\(where_) is shorter than expected (HTTP 416)"))
        case 408, 429, 500...599: return .transient
        default: return .fatal(AssetPackError(.remote, "\(where_): HTTP \(response.status)"))
        }
        guard let contentRange = response["Content-Range"],
            let (first, last, total) = Self.parseContentRange(contentRange), first == start, last < end, last >= first
        else {
            return .fatal(
                AssetPackError(
                    .remote,
                    "\(where_): the server answered bytes \(response["Content-Range"] ?? "(no Content-Range)") to a request for bytes \(start)-\(end - 1)"
                ))
        }
        let seen = Version(size: total, etag: response["ETag"], lastModified: response["Last-Modified"])
        return lock.withLock {
            guard let pinned else {
                guard seen.etag != nil || seen.lastModified != nil else {
                    return .fatal(
                        AssetPackError(
                            .remote,
                            "\(where_): the server sends neither ETag nor Last-Modified, so a change to the file could not be detected"
                        ))
                }
                self.pinned = seen
                if !ifRangeRefused { ifRange = Self.ifRangeValidator(for: seen, date: response["Date"]) }
                return nil
            }
            guard seen.isSame(as: pinned) else {
                let error = AssetPackError(
                    .remote,
                    "\(where_) changed while it was being read (was \(pinned.etag ?? pinned.lastModified ?? "?"), \(pinned.size) bytes; now \(seen.etag ?? seen.lastModified ?? "?"), \(seen.size) bytes)"
                )
                changed = error
                return .fatal(error)
            }
            // The weak ETag turned strong (Apache, a second after the change): now If-Range can
            // carry it.
            if ifRange == nil, !ifRangeRefused, pinned.hasWeakETag, let etag = seen.etag, !seen.hasWeakETag {
                ifRange = etag
            }
            return nil
        }
    }

    /// A `200` (the whole file) is another version than the pinned one: another size, or other
    /// validators (the ETag by weak comparison).
    private func hasChanged(_ response: ResponseHead) -> Bool {
        guard let pinned = version else { return false }
        let length = response["Content-Length"].flatMap { UInt64($0) } ?? pinned.size
        let seen = Version(size: length, etag: response["ETag"], lastModified: response["Last-Modified"])
        return !seen.isSame(as: pinned)
    }

    private func ignoresRange() -> AssetPackError {
        AssetPackError(
            .remote, "\(url.absoluteString): the server ignores Range requests (it answered 200 with the whole file)")
    }

    /// The total of a 416's `bytes */total`.
    static func unsatisfiedTotal(_ value: String) -> UInt64? {
        let parts = value.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bytes", parts[1].hasPrefix("*/") else { return nil }
        return UInt64(parts[1].dropFirst(2))
    }

    private func describe(_ response: ResponseHead) -> String {
        "now \(response["ETag"] ?? response["Last-Modified"] ?? "?")"
    }

    fileprivate func count(bytes: Int) { lock.withLock { counters.bytes += UInt64(bytes) } }

    /// `bytes first-last/total`.
    static func parseContentRange(_ value: String) -> (UInt64, UInt64, UInt64)? {
        let parts = value.trimmingCharacters(in: .whitespaces).split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bytes" else { return nil }
        let rangeAndTotal = parts[1].split(separator: "/")
        guard rangeAndTotal.count == 2, let total = UInt64(rangeAndTotal[1]) else { return nil }
        let bounds = rangeAndTotal[0].split(separator: "-")
        guard bounds.count == 2, let first = UInt64(bounds[0]), let last = UInt64(bounds[1]), last < total else {
            return nil
        }
        return (first, last, total)
    }
}

// MARK: - libcurl

/// Process-wide libcurl set-up.
private enum Curl {
    /// libcurl's receive buffer: large pieces mean few callbacks (its default is 16 KiB).
    static let bufferSize = 512 << 10

    private static let initialized: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
    static func initializeOnce() { _ = initialized }

    static func describe(_ code: CURLcode) -> String { String(cString: curl_easy_strerror(code)) }

    /// Failures that another attempt cannot fix: a URL or protocol libcurl refuses, a TLS
    /// certificate that does not verify. Everything else (connecting, timeouts, cut
    /// connections, name resolution) is worth retrying.
    static func isFatal(_ code: CURLcode) -> Bool {
        [
            CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT, CURLE_PEER_FAILED_VERIFICATION,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CERTPROBLEM, CURLE_TOO_MANY_REDIRECTS, CURLE_OUT_OF_MEMORY,
        ].contains(code)
    }
}

/// Easy handles between requests: a finished handle keeps its open connection, so the next
/// request to the same server reuses it.
private final class HandlePool: @unchecked Sendable {
    private let lock = NSLock()
    private var idle: [UnsafeMutableRawPointer] = []

    func take() -> UnsafeMutableRawPointer {
        if let handle = lock.withLock({ idle.popLast() }) {
            curl_easy_reset(handle)  // options go; connections and caches stay
            return handle
        }
        guard let handle = curl_easy_init() else { fatalError("curl_easy_init failed: out of memory") }
        return handle
    }

    func give(_ handle: UnsafeMutableRawPointer) { lock.withLock { idle.append(handle) } }

    deinit { for handle in idle { curl_easy_cleanup(handle) } }
}

/// A response's status line and headers.
struct ResponseHead {
    var status: Int
    /// Lower-cased names.
    var headers: [String: String]

    subscript(name: String) -> String? { headers[name.lowercased()] }
}

/// What libcurl's callbacks write to during one request: the final response's head, then the
/// body, to a range request's state or into a small buffer (the sidecar).
private final class Transfer {
    private let state: RangeState?
    let watchdog: Watchdog
    private var whole: WholeState?
    private let collectLimit: Int
    private(set) var collected: [UInt8] = []
    private var status = 0
    private var headers: [String: String] = [:]
    /// The final response's head, once its blank line arrived.
    private(set) var head: ResponseHead?

    init(_ state: RangeState, watchdog: Watchdog) {
        self.state = state
        self.watchdog = watchdog
        collectLimit = 0
    }

    init(collectingUpTo limit: Int, watchdog: Watchdog) {
        state = nil
        self.watchdog = watchdog
        collectLimit = limit
    }

    init(whole: WholeState, watchdog: Watchdog) {
        state = nil
        self.whole = whole
        self.watchdog = watchdog
        collectLimit = 0
    }

    /// libcurl's progress callback: non-zero stops the transfer (`CURLE_ABORTED_BY_CALLBACK`).
    static let onProgress: assetpack_curl_xferinfo_callback = { context, _, downloaded, _, _ in
        guard let context else { return 0 }
        let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
        return transfer.watchdog.allows(downloaded: Int64(downloaded)) ? 0 : 1
    }

    /// One header line (libcurl hands them whole, the status line first, for every response
    /// including redirects and `100 Continue`).
    static let onHeader: assetpack_curl_data_callback = { buffer, size, count, context in
        let length = size * count
        guard let buffer, let context else { return 0 }
        let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
        let line = String(decoding: UnsafeRawBufferPointer(start: buffer, count: length), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        return transfer.header(line) ? length : 0
    }

    /// A piece of the body. Returning less than its length stops the transfer.
    static let onBody: assetpack_curl_data_callback = { buffer, size, count, context in
        let length = size * count
        guard let context else { return 0 }
        let transfer = Unmanaged<Transfer>.fromOpaque(context).takeUnretainedValue()
        return transfer.body(UnsafeRawBufferPointer(start: buffer, count: length)) ? length : 0
    }

    private func header(_ line: String) -> Bool {
        if line.hasPrefix("HTTP/") {
            let fields = line.split(separator: " ", maxSplits: 2)
            status = fields.count > 1 ? Int(fields[1]) ?? 0 : 0
            headers = [:]
            head = nil
            return true
        }
        guard line.isEmpty else {
            if let colon = line.firstIndex(of: ":") {
                let name = line[..<colon].lowercased()
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                headers[name] = value
            }
            return true
        }
        // The end of one response's head. libcurl goes on after an interim or redirect response.
        if (100..<200).contains(status) || ((300..<400).contains(status) && headers["location"] != nil) {
            return true
        }
        let response = ResponseHead(status: status, headers: headers)
        head = response
        if let whole { return whole.response(response) }
        return state?.response(response) ?? true
    }

    private func body(_ piece: UnsafeRawBufferPointer) -> Bool {
        if let whole { return whole.body(piece) }
        guard let state else {
            collected += piece.prefix(collectLimit - collected.count)
            return collected.count < collectLimit || piece.isEmpty
        }
        return state.body(piece)
    }
}

/// One range request's progress, written by libcurl's callbacks on the requesting thread.
private final class RangeState {
    let client: HTTPRangeClient
    let start: UInt64, end: UInt64
    let sink: @Sendable (UnsafeRawBufferPointer, UInt64) throws -> Void
    /// Bytes handed to the sink end here.
    private var reached: UInt64
    /// Bytes received (handed to the sink or gathered) end here.
    private var received: UInt64
    /// Where pieces are gathered (empty when they go to the sink as they arrive).
    private let buffer: UnsafeMutableRawBufferPointer
    private var buffered = 0
    private var expectedEnd: UInt64
    private var headersSeen = false
    private var failure: HTTPRangeClient.Failure?
    private var detail: String?

    init(
        client: HTTPRangeClient, start: UInt64, end: UInt64, gathering: Bool,
        sink: @escaping @Sendable (UnsafeRawBufferPointer, UInt64) throws -> Void
    ) {
        buffer = .allocate(byteCount: gathering ? 1 << 20 : 0, alignment: 64)
        self.client = client
        self.start = start
        self.end = end
        self.sink = sink
        reached = start
        received = start
        expectedEnd = end
    }

    deinit { buffer.deallocate() }

    func outcome() -> HTTPRangeClient.Outcome {
        if let failure { return .init(result: .failure(failure), reached: reached, detail: detail) }
        if reached < expectedEnd {
            return .init(
                result: .failure(.transient), reached: reached,
                detail: "the response ended after \(reached - start) of \(expectedEnd - start) bytes")
        }
        return .init(result: .success(()), reached: reached)
    }

    /// The final response's head. Returns whether to go on.
    func response(_ response: ResponseHead) -> Bool {
        headersSeen = true
        if let refused = client.accept(response, start: start, end: end) {
            failure = refused
            if case .transient = refused { detail = "HTTP \(response.status)" }
            return false
        }
        if let value = response["Content-Range"], let (_, last, _) = HTTPRangeClient.parseContentRange(value) {
            expectedEnd = last + 1
        }
        return true
    }

    /// A piece of the body (up to libcurl's buffer size). Pieces are gathered into 1 MiB before
    /// they go to the sink, when gathering: a 64 MiB range is 64 writes.
    func body(_ piece: UnsafeRawBufferPointer) -> Bool {
        guard failure == nil, headersSeen else { return false }
        guard received + UInt64(piece.count) <= expectedEnd else {
            failure = .fatal(
                AssetPackError(.remote, "\(client.url.absoluteString): the server sent more bytes than it announced"))
            return false
        }
        if buffer.isEmpty {
            do { try sink(piece, reached) } catch {
                failure = Self.failure(error)
                return false
            }
            reached += UInt64(piece.count)
            received += UInt64(piece.count)
            client.count(bytes: piece.count)
            return true
        }
        var rest = piece
        while !rest.isEmpty {
            let n = min(rest.count, buffer.count - buffered)
            UnsafeMutableRawBufferPointer(rebasing: buffer[buffered..<buffered + n])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: rest[0..<n]))
            buffered += n
            rest = UnsafeRawBufferPointer(rebasing: rest[n...])
            if buffered == buffer.count && !flush() { return false }
        }
        received += UInt64(piece.count)
        client.count(bytes: piece.count)
        return true
    }

    /// Hands the gathered bytes to the sink. - Returns: Whether it took them.
    private func flush() -> Bool {
        guard buffered > 0 else { return true }
        do {
            try sink(UnsafeRawBufferPointer(rebasing: buffer[0..<buffered]), reached)
        } catch {
            failure = Self.failure(error)
            return false
        }
        reached += UInt64(buffered)
        buffered = 0
        return true
    }

    /// The end. Bytes received before a transient failure are good: they are kept, and a retry
    /// asks for the rest.
    func complete(_ result: CURLcode, verdict: Watchdog.Verdict?) {
        if failure == nil || isTransient { _ = flush() }
        if let verdict, failure == nil {
            switch verdict {
            case .cancelled: failure = .cancelled
            default:
                failure = .slow(
                    AssetPackError(.remote, "\(client.url.absoluteString): \(verdict.describe(client.limits))"))
            }
            return
        }
        guard result != CURLE_OK, failure == nil else { return }
        let message = Curl.describe(result)
        if Curl.isFatal(result) {
            failure = .fatal(AssetPackError(.remote, "\(client.url.absoluteString): \(message)"))
        } else {
            failure = .transient
            detail = message
        }
    }

    /// What a sink's error means for the request: cancellation stays cancellation.
    private static func failure(_ error: any Error) -> HTTPRangeClient.Failure {
        if error is CancellationError { return .cancelled }
        return .fatal(error as? AssetPackError ?? AssetPackError(.io, "\(error)"))
    }

    private var isTransient: Bool {
        if case .transient = failure { return true }
        return false
    }
}

/// One request's deadline, minimum rate and cancellation, checked from libcurl's progress
/// callback. The rate is measured over consecutive windows of `rateWindow` seconds from the
/// request's start: a window that brings fewer than `minimumRate × rateWindow` bytes ends the
/// request, so a server that drips or holds the connection fails within about two windows.
final class Watchdog {
    enum Verdict {
        case cancelled
        case deadline
        case tooSlow(bytes: Int64)

        /// - Parameter seconds: The time the bytes took (default: one rate window).
        func describe(_ limits: TransferLimits, seconds elapsed: TimeInterval? = nil) -> String {
            switch self {
            case .cancelled: "cancelled"
            case .deadline:
                "the request did not finish within its deadline of \(seconds(limits.requestTimeout)) s (TransferLimits.requestTimeout, --request-timeout)"
            case .tooSlow(let bytes):
                "the server sent \(bytes) bytes in \(seconds(elapsed ?? limits.rateWindow)) s, below the minimum rate of \(limits.minimumRate) bytes/s (TransferLimits.minimumRate, --min-rate)"
            }
        }

        private func seconds(_ value: TimeInterval) -> String {
            value == value.rounded() ? String(Int(value)) : String(format: "%.1f", value)
        }
    }

    private let limits: TransferLimits
    private let cancellation: Cancellation?
    private let start = DispatchTime.now().uptimeNanoseconds
    private var windowStart: UInt64
    private var windowBytes: Int64 = 0
    private(set) var verdict: Verdict?

    init(_ limits: TransferLimits, _ cancellation: Cancellation?) {
        self.limits = limits
        self.cancellation = cancellation
        windowStart = start
    }

    /// Whether the transfer may go on, with `downloaded` body bytes so far.
    func allows(downloaded: Int64) -> Bool {
        if verdict != nil { return false }
        if cancellation?.isCancelled == true {
            verdict = .cancelled
            return false
        }
        let now = DispatchTime.now().uptimeNanoseconds
        if Double(now - start) / 1e9 > limits.requestTimeout {
            verdict = .deadline
            return false
        }
        let window = Double(now - windowStart) / 1e9
        if window >= limits.rateWindow {
            let bytes = downloaded - windowBytes
            if Double(bytes) < Double(limits.minimumRate) * window {
                verdict = .tooSlow(bytes: bytes)
                return false
            }
            windowStart = now
            windowBytes = downloaded
        }
        return true
    }
}

/// One whole-file GET (``HTTPRangeClient/fetchWhole(expected:limit:into:)``), written by
/// libcurl's callbacks on the requesting thread.
private final class WholeState {
    let client: HTTPRangeClient
    let expected: HTTPRangeClient.Version
    let limit: UInt64
    let sink: (UnsafeRawBufferPointer, UInt64) throws -> Void
    private var length: UInt64?
    private var received: UInt64 = 0
    private var failure: Error?

    init(
        client: HTTPRangeClient, expected: HTTPRangeClient.Version, limit: UInt64,
        sink: @escaping (UnsafeRawBufferPointer, UInt64) throws -> Void
    ) {
        self.client = client
        self.expected = expected
        self.limit = limit
        self.sink = sink
    }

    /// The final response's head: `200`, a `Content-Length` within the limit, the expected
    /// version. Returns whether to go on.
    func response(_ response: ResponseHead) -> Bool {
        let where_ = client.url.absoluteString
        guard response.status == 200 else {
            failure = AssetPackError(.remote, "\(where_): HTTP \(response.status)")
            return false
        }
        guard let length = response["Content-Length"].flatMap({ UInt64($0) }) else {
            failure = AssetPackError(.remote, "\(where_): the server sends no Content-Length for the whole file")
            return false
        }
        guard length <= limit else {
            failure = AssetPackError(
                .limitExceeded, "\(where_) is \(length) bytes, more than the \(limit) a whole-file download may take")
            return false
        }
        let seen = HTTPRangeClient.Version(
            size: length, etag: response["ETag"], lastModified: response["Last-Modified"])
        guard seen.isSame(as: expected) else {
            failure = AssetPackError(
                .remote,
                "\(where_) changed before it was downloaded (was \(expected.etag ?? expected.lastModified ?? "?"), \(expected.size) bytes; now \(seen.etag ?? seen.lastModified ?? "?"), \(length) bytes)"
            )
            return false
        }
        self.length = length
        return true
    }

    /// A piece of the body: never past the `Content-Length`.
    func body(_ piece: UnsafeRawBufferPointer) -> Bool {
        guard failure == nil, let length else { return false }
        guard received + UInt64(piece.count) <= length else {
            failure = AssetPackError(
                .remote, "\(client.url.absoluteString): the server sent more bytes than it announced")
            return false
        }
        do { try sink(piece, received) } catch {
            failure = error
            return false
        }
        received += UInt64(piece.count)
        client.count(bytes: piece.count)
        return true
    }

    /// The end. - Throws: What went wrong, or `.remote` for a body cut short.
    func finish(_ result: CURLcode) throws {
        if let failure { throw failure }
        let where_ = client.url.absoluteString
        guard result == CURLE_OK else { throw AssetPackError(.remote, "\(where_): \(Curl.describe(result))") }
        guard let length, received == length else {
            throw AssetPackError(.remote, "\(where_): the response ended after \(received) of \(length ?? 0) bytes")
        }
    }
}
