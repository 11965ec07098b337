import AssetPackCore
import CLibcurl
import Foundation

/// Byte-range GETs of one remote file, pinned to one version of it (docs/REMOTE.md).
///
/// Every response must be `206 Partial Content` for exactly the bytes asked, with the total
/// size, `ETag` and `Last-Modified` the first response gave. After the first response each
/// request carries `If-Range` with that validator, so a server whose file changed answers `200`
/// with the new file, which is refused as soon as its headers arrive (no body byte is taken). A
/// server that ignores `Range` is refused the same way. Transient failures (connection errors,
/// timeouts, 5xx, 408, 429, a body cut short) are retried with exponential backoff, resuming
/// after the bytes already received. Bodies are streamed to the caller's sink: memory does not
/// grow with the range. Every request keeps ``TransferLimits``: a deadline and a minimum
/// sustained rate, checked by libcurl's progress callback, which also stops a transfer as soon
/// as its ``Cancellation`` is cancelled.
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
        while next < range.upperBound {
            try cancellation?.check()
            let outcome = request(next..<range.upperBound, gathering: gathering, cancellation: cancellation, sink: sink)
            // Real progress (1 MiB) forgives a failure: a long transfer cut now and then goes
            // on; a server that cuts every body early still fails after `attempts`.
            let progressed = outcome.reached >= next + Self.progressThatCounts
            next = max(next, outcome.reached)
            switch outcome.result {
            case .success:
                if next >= range.upperBound { return }
                // The file ends first (the range was clamped to it).
                if let size = version?.size, next >= size { return }
                // A shorter 206 than asked (servers may cap ranges): ask for the rest at once.
                if progressed { continue }
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
    }

    struct Outcome {
        var result: Result<Void, Failure>
        /// The file offset up to which bytes were handed to the sink.
        var reached: UInt64
        var detail: String?
    }

    private func request(
        _ range: Range<UInt64>, gathering: Bool, cancellation: Cancellation?,
        sink: @escaping @Sendable (UnsafeRawBufferPointer, UInt64) throws -> Void
    ) -> Outcome {
        var headers = ["Range: bytes=\(range.lowerBound)-\(range.upperBound - 1)", "Accept-Encoding: identity"]
        // If-Range needs a strong validator: a weak ETag (W/"…") would make a server answer 200.
        if let pinned = version,
            let validator = pinned.etag.flatMap({ $0.hasPrefix("W/") ? nil : $0 }) ?? pinned.lastModified
        {
            headers.append("If-Range: \(validator)")
        }
        let state = RangeState(
            client: self, start: range.lowerBound, end: range.upperBound, gathering: gathering, sink: sink)
        lock.withLock { counters.requests += 1 }
        let transfer = Transfer(state, watchdog: Watchdog(limits, cancellation))
        let result = perform(transfer, url: url, headers: headers)
        state.complete(result, verdict: transfer.watchdog.verdict)
        return state.outcome()
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
            if version != nil, hasChanged(response) {
                let error = AssetPackError(.remote, "\(where_) changed while it was being read (\(describe(response)))")
                lock.withLock { changed = error }
                return .fatal(error)
            }
            return .fatal(
                AssetPackError(
                    .remote, "\(where_): the server ignores Range requests (it answered 200 with the whole file)"))
        case 416:
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
                return nil
            }
            guard seen == pinned else {
                let error = AssetPackError(
                    .remote,
                    "\(where_) changed while it was being read (was \(pinned.etag ?? pinned.lastModified ?? "?"), \(pinned.size) bytes; now \(seen.etag ?? seen.lastModified ?? "?"), \(seen.size) bytes)"
                )
                changed = error
                return .fatal(error)
            }
            return nil
        }
    }

    private func hasChanged(_ response: ResponseHead) -> Bool {
        guard let pinned = version else { return false }
        return response["ETag"] != pinned.etag || response["Last-Modified"] != pinned.lastModified
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
        return state?.response(response) ?? true
    }

    private func body(_ piece: UnsafeRawBufferPointer) -> Bool {
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

        func describe(_ limits: TransferLimits) -> String {
            switch self {
            case .cancelled: "cancelled"
            case .deadline:
                "the request did not finish within its deadline of \(seconds(limits.requestTimeout)) s (TransferLimits.requestTimeout, --request-timeout)"
            case .tooSlow(let bytes):
                "the server sent \(bytes) bytes in \(seconds(limits.rateWindow)) s, below the minimum rate of \(limits.minimumRate) bytes/s (TransferLimits.minimumRate, --min-rate)"
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
