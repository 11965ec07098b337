import AssetPackCore
internal import CLibcurl
import Foundation

// What one request of HTTPRangeClient has received, fed by the transport's callbacks: the body
// checked against what the head announced, gathered for the sink, and the end classified
// (complete, transient, fatal, too slow) for the retry loop in HTTPRangeClient.fetch.

/// One range request's progress, written by libcurl's callbacks on the requesting thread.
final class RangeState {
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
    func complete(_ result: CURLcode, message: String, verdict: Watchdog.Verdict?) {
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

/// One whole-file GET (``HTTPRangeClient/fetchWhole(expected:limit:into:)``), written by
/// libcurl's callbacks on the requesting thread.
final class WholeState {
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
    func finish(_ result: CURLcode, message: String) throws {
        if let failure { throw failure }
        let where_ = client.url.absoluteString
        guard result == CURLE_OK else { throw AssetPackError(.remote, "\(where_): \(message)") }
        guard let length, received == length else {
            throw AssetPackError(.remote, "\(where_): the response ended after \(received) of \(length ?? 0) bytes")
        }
    }
}
