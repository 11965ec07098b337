import AssetPackCore
internal import CLibcurl
import Foundation

/// A range-serving HTTP origin in memory, for tests: what ``HTTPRangeClient`` sends to a URL of
/// ``url(_:)`` goes to it instead of libcurl (``RemoteMirror/Options/inMemoryServer``), so the
/// remote logic above the transport (ranges, validators, retries, resumes, deltas, installs) runs
/// in-process, with no server started, as swift-nio's `EmbeddedChannel` runs a pipeline without
/// a socket. It answers as nginx does: `206` with `Content-Range` for a `Range`, `200` without,
/// a strong `ETag` and a `Last-Modified` per version, `404` for what it does not hold; and it
/// breaks as networks and servers do (``Fault``). Real servers remain the conformance tier
/// (RemoteTests, ServerConformanceTests); this is not a second implementation of HTTP, only of
/// the answers the client's checks read.
package final class InMemoryHTTPServer: @unchecked Sendable {
    /// What a request meets.
    package enum Fault: Sendable, Equatable {
        case none
        /// The next `times` requests are answered `503` with `Retry-After: 0`.
        case status503(times: Int)
        /// The next `times` responses end (a cut connection) after `bytes` body bytes.
        case cutAfter(bytes: Int, times: Int)
        /// Every request is answered `200` with the whole file (a server that ignores `Range`).
        case ignoreRange
        /// Every `206` holds at most `bytes` (servers and CDNs cap responses).
        case capResponses(bytes: Int)
    }

    /// One request, as served.
    package struct Request: Sendable, Equatable {
        package var path: String
        package var range: String?
        package var status: Int
        package var bodyBytes: Int
    }

    private struct File {
        var bytes: [UInt8]
        var etag: String
        var lastModified: String
    }

    private let lock = NSLock()
    private var files: [String: File] = [:]
    private var fault = Fault.none
    private var served: [Request] = []
    private var versions = 0

    package init() {}

    /// The URL of `path` on this server (a host no resolver answers, so nothing reaches a network
    /// if the server is not given to the client).
    package func url(_ path: String) -> URL { URL(string: "http://in-memory.invalid/\(path)")! }

    /// Serves `bytes` at `path`, as a new version (a new `ETag` and `Last-Modified`).
    package func put(_ path: String, _ bytes: [UInt8]) {
        lock.withLock {
            versions += 1
            let modified = Date(timeIntervalSince1970: 1_700_000_000 + Double(versions))
            files[path] = File(
                bytes: bytes, etag: "\"v\(versions)-\(bytes.count)\"", lastModified: Self.httpDate(modified))
        }
    }

    /// Serves the file at `file` at `path` (read now).
    package func put(_ path: String, contentsOf file: URL) throws {
        put(path, [UInt8](try Data(contentsOf: file)))
    }

    /// What requests meet from now on.
    package func setFault(_ fault: Fault) { lock.withLock { self.fault = fault } }

    /// The requests served so far, oldest first.
    package var requests: [Request] { lock.withLock { served } }

    /// Forgets the requests served so far.
    package func resetRequests() { lock.withLock { served = [] } }

    // MARK: - Serving (HTTPRangeClient.perform)

    /// Answers one GET of `url` with `headers` into `transfer`, as libcurl would deliver it: the
    /// head line by line, then the body in pieces, each piece asked of the watchdog first.
    func perform(_ transfer: Transfer, url: URL, headers: [String]) -> CURLcode {
        let path = String(url.path.dropFirst())
        let rangeHeader = headers.first { $0.lowercased().hasPrefix("range:") }.map {
            String($0.dropFirst("range:".count)).trimmingCharacters(in: .whitespaces)
        }
        let (file, fault) = lock.withLock { () -> (File?, Fault) in
            let current = self.fault
            switch current {
            case .status503(let times) where times > 0:
                self.fault = times > 1 ? .status503(times: times - 1) : .none
            case .cutAfter(let bytes, let times) where times > 0:
                self.fault = times > 1 ? .cutAfter(bytes: bytes, times: times - 1) : .none
            default: break
            }
            return (files[path], current)
        }
        var status = 200
        var body: ArraySlice<UInt8> = []
        var head: [String] = []
        var cut: Int?
        defer {
            lock.withLock {
                served.append(Request(path: path, range: rangeHeader, status: status, bodyBytes: body.count))
            }
        }
        switch (file, fault) {
        case (nil, _):
            status = 404
        case (_, .status503(let times)) where times > 0:
            status = 503
            head = ["Retry-After: 0"]
        case (let file?, _):
            head = ["ETag: \(file.etag)", "Last-Modified: \(file.lastModified)", "Accept-Ranges: bytes"]
            let size = file.bytes.count
            if let rangeHeader, fault != .ignoreRange, let (first, last) = Self.parse(rangeHeader, size: size) {
                var end = last
                if case .capResponses(let cap) = fault { end = min(last, first + cap - 1) }
                status = 206
                head.append("Content-Range: bytes \(first)-\(end)/\(size)")
                body = file.bytes[first...end]
            } else if rangeHeader != nil, fault != .ignoreRange {
                status = 416
                head.append("Content-Range: bytes */\(size)")
            } else {
                body = file.bytes[...]
            }
            if case .cutAfter(let bytes, let times) = fault, times > 0 { cut = bytes }
        }
        let reason = [
            200: "OK", 206: "Partial Content", 404: "Not Found", 416: "Range Not Satisfiable",
            503: "Service Unavailable",
        ]
        var lines = ["HTTP/1.1 \(status) \(reason[status] ?? "")", "Content-Length: \(body.count)"] + head
        lines.append("")
        for line in lines where !transfer.header(line) { return CURLE_WRITE_ERROR }
        var sent = 0
        let sending = cut.map { min($0, body.count) } ?? body.count
        while sent < sending {
            guard transfer.watchdog.allows(downloaded: Int64(sent)) else { return CURLE_ABORTED_BY_CALLBACK }
            let piece = body[(body.startIndex + sent)..<(body.startIndex + min(sending, sent + (64 << 10)))]
            let taken = piece.withUnsafeBytes { transfer.body($0) }
            guard taken else { return CURLE_WRITE_ERROR }
            sent += piece.count
        }
        if sending < body.count { return CURLE_PARTIAL_FILE }
        return transfer.watchdog.allows(downloaded: Int64(sent)) ? CURLE_OK : CURLE_ABORTED_BY_CALLBACK
    }

    /// `bytes=a-b`, `bytes=a-` or `bytes=-n` against `size`: the first and last byte, or `nil`
    /// when it is not satisfiable.
    private static func parse(_ header: String, size: Int) -> (Int, Int)? {
        guard header.hasPrefix("bytes="), size > 0 else { return nil }
        let spec = header.dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
        guard spec.count == 2 else { return nil }
        if spec[0].isEmpty, let suffix = Int(spec[1]), suffix > 0 { return (max(0, size - suffix), size - 1) }
        guard let first = Int(spec[0]), first < size else { return nil }
        let last = spec[1].isEmpty ? size - 1 : min(Int(spec[1]) ?? -1, size - 1)
        return last >= first ? (first, last) : nil
    }

    private static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
