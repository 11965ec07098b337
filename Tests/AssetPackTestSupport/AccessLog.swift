import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One request as a server's access log records it.
public struct AccessLogLine: Sendable, Equatable {
    /// The request method (`GET`, `HEAD`, …).
    public var method: String
    /// The request target as sent (path and query, percent-encoded).
    public var uri: String
    /// The response status; `0` when ``FaultyHTTPServer`` closed the connection without answering.
    public var status: Int
    /// Body bytes sent (nginx `$body_bytes_sent`; for a truncated response, the bytes actually sent).
    public var bodyBytes: Int
    /// Bytes sent in all, status line and headers included (nginx `$bytes_sent`).
    public var totalBytes: Int
    /// The request's `Range` header, or `nil` when it had none.
    public var range: String?
    /// The protocol (`HTTP/1.1`, `HTTP/2.0`), where the server logs it (nginx); `nil` elsewhere.
    public var httpProtocol: String?

    /// Creates a line.
    public init(
        method: String, uri: String, status: Int, bodyBytes: Int, totalBytes: Int, range: String?,
        httpProtocol: String? = nil
    ) {
        self.method = method
        self.uri = uri
        self.status = status
        self.bodyBytes = bodyBytes
        self.totalBytes = totalBytes
        self.range = range
        self.httpProtocol = httpProtocol
    }

    /// Parses the tab-separated log the servers write (method, URI, status, body bytes, total bytes,
    /// Range or `-`, and from nginx the protocol). Only complete lines count: a final line without its newline is still being
    /// written and is skipped.
    static func parse(_ text: String) throws -> [AccessLogLine] {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        lines.removeLast()  // the text after the last newline: empty, or a partial line
        return try lines.filter { !$0.isEmpty }.map { line in
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 6 || fields.count == 7, let status = Int(fields[2]), let body = Int(fields[3]),
                let total = Int(fields[4])
            else { throw HTTPTestServerError("unreadable access log line: \(line.debugDescription)") }
            return AccessLogLine(
                method: fields[0], uri: fields[1], status: status, bodyBytes: body, totalBytes: total,
                range: fields[5] == "-" ? nil : fields[5], httpProtocol: fields.count == 7 ? fields[6] : nil)
        }
    }

    /// Reads `file`'s lines, polling until there are at least `count` (both servers write a line
    /// just after the response's last byte, so a client can finish first).
    static func read(_ file: URL, waitingFor count: Int, timeout: TimeInterval) throws -> [AccessLogLine] {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            let data: Data
            do {
                data = try Data(contentsOf: file)
            } catch {
                throw HTTPTestServerError("cannot read the access log \(file.path): \(error)")
            }
            let lines = try parse(String(decoding: data, as: UTF8.self))
            if lines.count >= count || Date() >= deadline { return lines }
            usleep(5_000)
        }
    }
}

/// Empties the log at `file` in place (its server appends with `O_APPEND`, so it keeps writing at the
/// new end).
func emptyLog(_ file: URL) throws {
    guard truncate(file.path, 0) == 0 else {
        throw HTTPTestServerError("cannot truncate \(file.path): \(String(cString: strerror(errno)))")
    }
}
