import AssetPackCore
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Byte-range GETs of one remote file, pinned to one version of it (docs/REMOTE.md).
///
/// Every response must be `206 Partial Content` for exactly the bytes asked, with the total
/// size, `ETag` and `Last-Modified` the first response gave. After the first response each
/// request carries `If-Range` with that validator, so a server whose file changed answers `200`
/// with the new file, which is refused as soon as its headers arrive (no body is read). A
/// server that ignores `Range` is refused the same way. Transient failures (connection errors,
/// timeouts, 5xx, 408, 429, a body cut short) are retried with exponential backoff, resuming
/// after the bytes already received. Bodies are streamed to the caller's sink: memory does not
/// grow with the range.
///
/// The transport is Foundation's `URLSession` (libcurl on Linux); docs/REMOTE.md says why.
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
    private let session: URLSession
    private let delegate: SessionDelegate
    private let lock = NSLock()
    private var pinned: Version?
    private var counters = (requests: 0, bytes: UInt64(0))
    private var changed: AssetPackError?

    /// - Parameters:
    ///   - url: An `http` or `https` URL.
    package init(url: URL, retry: Retry = Retry(), timeout: TimeInterval = 30) throws {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https", url.host != nil else {
            throw AssetPackError(.invalidArgument, "\(url.absoluteString) is not an http:// or https:// URL")
        }
        self.url = url
        self.retry = retry
        let configuration = URLSessionConfiguration.ephemeral
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.timeoutIntervalForRequest = timeout
        configuration.httpMaximumConnectionsPerHost = 4
        delegate = SessionDelegate()
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: queue)
    }

    deinit { session.invalidateAndCancel() }

    /// The version every response so far had (`nil` before the first).
    package var version: Version? { lock.withLock { pinned } }

    /// The error that reported the file changed, once a response showed it.
    package var changeDetected: AssetPackError? { lock.withLock { changed } }

    /// Requests made (retries included) and body bytes received.
    package var transferred: (requests: Int, bytes: UInt64) { lock.withLock { counters } }

    /// Fetches bytes `range` (clamped to the file's end once its size is known), handing each
    /// piece to `sink(piece, fileOffset)` in order.
    /// - Throws: `.remote` (refused or failing server, or a changed file), `.integrityFailure`
    ///   (the file is shorter than the range), whatever `sink` throws.
    package func fetch(
        _ range: Range<UInt64>, into sink: @escaping @Sendable (UnsafeRawBufferPointer, UInt64) throws -> Void
    ) throws {
        var next = range.lowerBound
        var attempt = 0
        while next < range.upperBound {
            let outcome = request(next..<range.upperBound, sink: sink)
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
                Thread.sleep(forTimeInterval: retry.initialDelay * Double(1 << (attempt - 1)))
            case .failure(.fatal(let error)):
                throw error
            }
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
        var request = URLRequest(url: sidecarURL)
        request.setValue("bytes=0-4095", forHTTPHeaderField: "Range")
        let box = ResultBox<(Int, Data)>()
        let task = session.dataTask(with: request) { data, response, error in
            if let error {
                box.set(.failure(AssetPackError(.remote, "\(sidecarURL): \(error.localizedDescription)")))
            } else {
                box.set(.success(((response as? HTTPURLResponse)?.statusCode ?? 0, data ?? Data())))
            }
        }
        task.resume()
        let (status, data) = try box.wait()
        lock.withLock { counters.requests += 1 }
        if status == 404 || status == 403 { return nil }
        guard status == 200 || status == 206 else {
            throw AssetPackError(.remote, "\(sidecarURL.absoluteString): HTTP \(status)")
        }
        let text = String(decoding: data.prefix(4096), as: UTF8.self)
        let first = text.split(whereSeparator: \.isWhitespace).first.map(String.init) ?? ""
        guard first.count == 64, first.allSatisfy(\.isHexDigit) else { return nil }
        return text
    }

    // MARK: - One request

    enum Failure: Error {
        case transient
        case fatal(AssetPackError)
    }

    struct Outcome {
        var result: Result<Void, Failure>
        /// The file offset up to which bytes were handed to the sink.
        var reached: UInt64
        var detail: String?
    }

    private func request(
        _ range: Range<UInt64>, sink: @escaping @Sendable (UnsafeRawBufferPointer, UInt64) throws -> Void
    ) -> Outcome {
        var request = URLRequest(url: url)
        request.setValue("bytes=\(range.lowerBound)-\(range.upperBound - 1)", forHTTPHeaderField: "Range")
        request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        // If-Range needs a strong validator: a weak ETag (W/"…") would make a server answer 200.
        if let pinned = version,
            let validator = pinned.etag.flatMap({ $0.hasPrefix("W/") ? nil : $0 }) ?? pinned.lastModified
        {
            request.setValue(validator, forHTTPHeaderField: "If-Range")
        }
        let state = TaskState(client: self, start: range.lowerBound, end: range.upperBound, sink: sink)
        lock.withLock { counters.requests += 1 }
        let task = session.dataTask(with: request)
        delegate.register(task, state)
        task.resume()
        state.done.wait()
        delegate.unregister(task)
        return state.outcome()
    }

    /// Checks a response's status and headers against the request and the pinned version.
    fileprivate func accept(_ response: HTTPURLResponse, start: UInt64, end: UInt64) -> Failure? {
        let where_ = url.absoluteString
        switch response.statusCode {
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
        default: return .fatal(AssetPackError(.remote, "\(where_): HTTP \(response.statusCode)"))
        }
        guard let contentRange = response.value(forHTTPHeaderField: "Content-Range"),
            let (first, last, total) = Self.parseContentRange(contentRange), first == start, last < end, last >= first
        else {
            return .fatal(
                AssetPackError(
                    .remote,
                    "\(where_): the server answered bytes \(response.value(forHTTPHeaderField: "Content-Range") ?? "(no Content-Range)") to a request for bytes \(start)-\(end - 1)"
                ))
        }
        let seen = Version(
            size: total, etag: response.value(forHTTPHeaderField: "ETag"),
            lastModified: response.value(forHTTPHeaderField: "Last-Modified"))
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

    private func hasChanged(_ response: HTTPURLResponse) -> Bool {
        guard let pinned = version else { return false }
        return response.value(forHTTPHeaderField: "ETag") != pinned.etag
            || response.value(forHTTPHeaderField: "Last-Modified") != pinned.lastModified
    }

    private func describe(_ response: HTTPURLResponse) -> String {
        "now \(response.value(forHTTPHeaderField: "ETag") ?? response.value(forHTTPHeaderField: "Last-Modified") ?? "?")"
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

/// One request's progress, written by the delegate queue and read after `done`.
private final class TaskState: @unchecked Sendable {
    let client: HTTPRangeClient
    let start: UInt64, end: UInt64
    let sink: @Sendable (UnsafeRawBufferPointer, UInt64) throws -> Void
    let done = DispatchSemaphore(value: 0)
    /// Bytes handed to the sink end here.
    private var reached: UInt64
    /// Bytes received (handed to the sink or gathered) end here.
    private var received: UInt64
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 64)
    private var buffered = 0
    private var expectedEnd: UInt64
    private var failure: HTTPRangeClient.Failure?
    private var detail: String?

    init(
        client: HTTPRangeClient, start: UInt64, end: UInt64,
        sink: @escaping @Sendable (UnsafeRawBufferPointer, UInt64) throws -> Void
    ) {
        self.client = client
        self.start = start
        self.end = end
        self.sink = sink
        reached = start
        received = start
        expectedEnd = end
    }

    func outcome() -> HTTPRangeClient.Outcome {
        if let failure { return .init(result: .failure(failure), reached: reached, detail: detail) }
        if reached < expectedEnd {
            return .init(
                result: .failure(.transient), reached: reached,
                detail: "the response ended after \(reached - start) of \(expectedEnd - start) bytes")
        }
        return .init(result: .success(()), reached: reached)
    }

    /// Delegate queue: the headers. Returns whether to go on.
    func response(_ response: URLResponse) -> Bool {
        guard let http = response as? HTTPURLResponse else {
            failure = .fatal(AssetPackError(.remote, "\(client.url.absoluteString): not an HTTP response"))
            return false
        }
        if let refused = client.accept(http, start: start, end: end) {
            failure = refused
            if case .transient = refused { detail = "HTTP \(http.statusCode)" }
            return false
        }
        if let value = http.value(forHTTPHeaderField: "Content-Range"),
            let (_, last, _) = HTTPRangeClient.parseContentRange(value)
        {
            expectedEnd = last + 1
        }
        return true
    }

    /// Delegate queue: a piece of the body. Pieces (16 KiB from libcurl) are gathered into
    /// 1 MiB before they go to the sink: a 64 MiB range is 64 writes, not 4,096.
    func body(_ data: Data) -> Bool {
        guard failure == nil else { return false }
        guard received + UInt64(data.count) <= expectedEnd else {
            failure = .fatal(
                AssetPackError(.remote, "\(client.url.absoluteString): the server sent more bytes than it announced"))
            return false
        }
        var rest = data[...]
        while !rest.isEmpty {
            let n = min(rest.count, buffer.count - buffered)
            rest.prefix(n).withUnsafeBytes {
                UnsafeMutableRawBufferPointer(rebasing: buffer[buffered..<buffered + n]).copyMemory(from: $0)
            }
            buffered += n
            rest = rest.dropFirst(n)
            if buffered == buffer.count && !flush() { return false }
        }
        received += UInt64(data.count)
        client.count(bytes: data.count)
        return true
    }

    /// Hands the gathered bytes to the sink. - Returns: Whether it took them.
    private func flush() -> Bool {
        guard buffered > 0 else { return true }
        do {
            try sink(UnsafeRawBufferPointer(rebasing: buffer[0..<buffered]), reached)
        } catch {
            failure = .fatal(error as? AssetPackError ?? AssetPackError(.io, "\(error)"))
            return false
        }
        reached += UInt64(buffered)
        buffered = 0
        return true
    }

    /// Delegate queue: the end. Bytes received before a transient failure are good: they are
    /// kept, and a retry asks for the rest.
    func complete(_ error: (any Error)?) {
        if failure == nil || isTransient { _ = flush() }
        if let error, failure == nil {
            failure = .transient
            detail = error.localizedDescription
        }
        buffer.deallocate()
        done.signal()
    }

    private var isTransient: Bool {
        if case .transient = failure { return true }
        return false
    }
}

/// Routes one session's task events to their `TaskState`.
private final class SessionDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var states: [Int: TaskState] = [:]

    func register(_ task: URLSessionTask, _ state: TaskState) {
        lock.withLock { states[task.taskIdentifier] = state }
    }

    func unregister(_ task: URLSessionTask) {
        _ = lock.withLock { states.removeValue(forKey: task.taskIdentifier) }
    }

    private func state(_ task: URLSessionTask) -> TaskState? { lock.withLock { states[task.taskIdentifier] } }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        let go = state(dataTask)?.response(response) ?? true  // no state: a completion-handler task
        completionHandler(go ? .allow : .cancel)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        if state(dataTask)?.body(data) == false { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        state(task)?.complete(error)
    }
}

/// A value handed from a completion handler to a waiting thread.
private final class ResultBox<T>: @unchecked Sendable {
    private let semaphore = DispatchSemaphore(value: 0)
    private var result: Result<T, AssetPackError>?

    func set(_ value: Result<T, AssetPackError>) {
        result = value
        semaphore.signal()
    }

    func wait() throws -> T {
        semaphore.wait()
        return try result!.get()
    }
}
