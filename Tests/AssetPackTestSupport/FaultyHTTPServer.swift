import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A small HTTP/1.1 file server (Python 3, run with `/usr/bin/env python3`) with correct single-range
/// support that injects one ``Fault`` at a time, changeable while it runs.
///
/// It answers like nginx: a strong `ETag` `"<hex mtime>-<hex size>"`, `Last-Modified`,
/// `Accept-Ranges: bytes` on a `200`, `206` with `Content-Range: bytes a-b/total` for one range
/// (`bytes=a-b`, `bytes=a-`, `bytes=-n`), `200` with the whole file for several ranges or a malformed
/// header, `416` with `Content-Range: bytes */total` past the end, `If-Range` (strong ETag or exact
/// date) and `If-Match`, `HEAD`, and keep-alive (every faulty response closes its connection).
/// Requests are logged in the same shape as ``NginxServer``'s access log.
public final class FaultyHTTPServer: @unchecked Sendable {
    /// What the server does wrong. Counts start again at zero whenever ``setFault(_:)`` is called.
    public enum Fault: Sendable, Equatable {
        /// Nothing: a correct server.
        case none
        /// For the first `times` GET requests carrying a `Range` header: the right headers (full
        /// `Content-Length`), then the connection closes after `afterBytes` body bytes.
        case truncateBody(afterBytes: Int, times: Int)
        /// Every response covering the file offset `offsetInFile` carries that byte XORed with 0xFF
        /// (headers unchanged, ETag included).
        case corruptByte(offsetInFile: Int)
        /// For the first `times` requests: the request is read, then the connection closes without an
        /// answer (logged with status 0).
        case dropConnectionBeforeHeaders(times: Int)
        /// For the first `times` requests: `503 Service Unavailable` (with `Retry-After: 0`).
        case status503(times: Int)
        /// `Range` is ignored: `200` with the whole file, and no `Accept-Ranges` header.
        case ignoreRange
        /// After the first `requests` requests, every file reports another ETag and `Last-Modified`
        /// (its mtime plus one second), as if it had been replaced; the bytes stay the same.
        case changeETagAfter(requests: Int)
        /// Every file claims to be `size` bytes (its own bytes, then zeros without end): the
        /// endless-data attack. Bodies are generated as they are sent.
        case claimSize(UInt64)
        /// Correct headers, then the body at `bytesPerSecond` (slow retrieval).
        case drip(bytesPerSecond: Int)
        /// Correct headers and the first `afterBytes` body bytes of every ranged GET, then
        /// nothing, with the connection held open.
        case stallAfter(bytes: Int)
        /// Every `206` body is at most `bytes` long, with a `Content-Range` that says so: a complete,
        /// shorter answer than asked, as some CDNs and object stores give.
        case capRanges(bytes: Int)
        /// As ``capRanges(bytes:)``, each `206` sent only after `seconds`: a drip made of
        /// complete, tiny answers (each request is quick and whole; the transfer never ends).
        case capRangesSlowly(bytes: Int, seconds: Int)
        /// Apache's first second after a change, for the first `requests` requests: the ETag is weak
        /// (`W/"…"`), and `If-Range` never matches (a weak ETag never does; a date that recent is weak
        /// too), so a ranged request with `If-Range` gets `200` and the whole file. Later requests get
        /// the same ETag, strong.
        case weakValidators(requests: Int)
        /// `If-Range` never matches, whatever it holds: a ranged request with `If-Range` gets `200`
        /// and the whole file (a server, or a cache in front of one, that trusts no validator).
        case refuseIfRange
        /// Every request for a path ending in `suffix` (`.sha256`): an error `status` (401, 410,
        /// 500), whatever is on disk.
        case statusFor(suffix: String, status: Int)
        /// After request `requests`, every 206 body gzip-compressed and sent with
        /// `Content-Encoding: gzip` (and the compressed length): not the file's bytes.
        case encodeRanges(after: Int)
    }

    /// The directory served at `/`.
    public let root: URL
    /// The port the server listens on (127.0.0.1).
    public let port: Int
    /// The server's address, `http://127.0.0.1:PORT/`.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)/")! }
    /// The request log (same format as ``NginxServer/accessLogURL``).
    public var requestLogURL: URL { directory.appending("requests.log") }

    private let directory: TemporaryDirectory
    private let process: Process
    private let stdout: Pipe
    private let lock = NSLock()
    private var stopped = false
    private var generation = 0

    /// Starts the server on a free port with `fault`, and waits (up to 10 s) for it to listen.
    ///
    /// - Throws: ``HTTPTestServerError`` when `python3` cannot be run or the server does not start;
    ///   the message quotes Python's error output.
    public init(root: URL, fault: Fault = .none) throws {
        try requireDirectory(root, "server root")
        self.root = root.standardizedFileURL
        directory = TemporaryDirectory("faulty-http")
        let script = try Self.script
        try Data().write(to: directory.appending("requests.log"))
        try Data().write(to: directory.appending("stderr.log"))
        try Self.writeControl(fault, generation: 0, to: directory.appending("fault.json"))

        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", "-u", script.path, self.root.path, directory.appending("fault.json").path,
            directory.appending("requests.log").path,
        ]
        stdout = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = stdout
        process.standardError = try FileHandle(forWritingTo: directory.appending("stderr.log"))
        do {
            try runWithUnblockedSignals(process)
        } catch {
            throw HTTPTestServerError("cannot run /usr/bin/env python3: \(error)")
        }

        // The script prints its port on the first line of standard output.
        let firstLine = LockedData()
        let done = DispatchSemaphore(value: 0)
        let handle = stdout.fileHandleForReading
        DispatchQueue.global().async {
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                if firstLine.append(chunk).contains(UInt8(ascii: "\n")) { break }
            }
            done.signal()
        }
        let timedOut = done.wait(timeout: .now() + 10) == .timedOut
        let line = String(decoding: firstLine.value, as: UTF8.self).split(separator: "\n").first ?? ""
        guard !timedOut, let port = Int(line.trimmingCharacters(in: .whitespaces)), port > 0 else {
            terminate(process, timeout: 2)
            let stderr = (try? String(contentsOf: directory.appending("stderr.log"), encoding: .utf8)) ?? ""
            throw HTTPTestServerError(
                "the fault-injecting server (python3) did not report its port"
                    + (timedOut ? " within 10 s" : "") + "; it needs python3 on PATH. Output: "
                    + "\(String(line).debugDescription)\n\(stderr)")
        }
        self.port = port
        guard waitUntilListening(process, port: port, timeout: 10) == .listening else {
            terminate(process, timeout: 2)
            throw HTTPTestServerError("the fault-injecting server does not accept connections on port \(port)")
        }
    }

    deinit { stop() }

    /// The URL of `relativePath` on this server, percent-encoded as needed.
    public func url(_ relativePath: String) -> URL {
        serverURL(baseURL, relativePath)
    }

    /// Replaces the fault; the server reads it at its next request and restarts its counts.
    public func setFault(_ fault: Fault) throws {
        lock.lock()
        defer { lock.unlock() }
        generation += 1
        try Self.writeControl(fault, generation: generation, to: directory.appending("fault.json"))
    }

    /// The requests served so far (complete log lines, oldest first). The server logs each just after
    /// its response's last byte: pass `count` to wait (up to `timeout`) until there are that many.
    /// (It returns as soon as `count` requests are logged: the timeout is only what a loaded
    /// machine may need. 2 s was too little with three test processes on two cores: a request
    /// answered was not yet logged.)
    public func requests(waitingFor count: Int = 0, timeout: TimeInterval = 15) throws -> [AccessLogLine] {
        try AccessLogLine.read(requestLogURL, waitingFor: count, timeout: timeout)
    }

    /// How many requests the log holds (see ``requests(waitingFor:timeout:)``).
    public var requestCount: Int {
        get throws { try requests().count }
    }

    /// Empties the request log.
    public func resetRequests() throws { try emptyLog(requestLogURL) }

    /// Stops the server and waits for it to exit. Safe to call twice.
    public func stop() {
        lock.lock()
        let first = !stopped
        stopped = true
        lock.unlock()
        if first { terminate(process, timeout: 5) }
    }

    /// The control file's JSON (fault_server.py's header lists the modes).
    private struct Control: Encodable {
        var generation = 0
        var mode: String
        var afterBytes = 0
        var times = 0
        var offset = 0
        var requests = 0
        var size: UInt64 = 0
        var rate = 0
        var cap = 0
        var suffix = ""
        var status = 0
    }

    private static func writeControl(_ fault: Fault, generation: Int, to file: URL) throws {
        var control: Control
        switch fault {
        case .none: control = Control(mode: "none")
        case .truncateBody(let bytes, let times): control = Control(mode: "truncate", afterBytes: bytes, times: times)
        case .corruptByte(let offset): control = Control(mode: "corrupt", offset: offset)
        case .dropConnectionBeforeHeaders(let times): control = Control(mode: "drop", times: times)
        case .status503(let times): control = Control(mode: "status503", times: times)
        case .ignoreRange: control = Control(mode: "ignoreRange")
        case .changeETagAfter(let requests): control = Control(mode: "changeETag", requests: requests)
        case .claimSize(let size): control = Control(mode: "claimSize", size: size)
        case .drip(let rate): control = Control(mode: "drip", rate: rate)
        case .stallAfter(let bytes): control = Control(mode: "stall", afterBytes: bytes)
        case .capRanges(let bytes): control = Control(mode: "cap", cap: bytes)
        case .capRangesSlowly(let bytes, let seconds): control = Control(mode: "capSlow", rate: seconds, cap: bytes)
        case .weakValidators(let requests): control = Control(mode: "weak", requests: requests)
        case .statusFor(let suffix, let status): control = Control(mode: "statusFor", suffix: suffix, status: status)
        case .refuseIfRange: control = Control(mode: "refuseIfRange")
        case .encodeRanges(let requests): control = Control(mode: "encodeRanges", requests: requests)
        }
        control.generation = generation
        // Atomic (rename), so the server never reads half a file.
        try JSONEncoder().encode(control).write(to: file, options: .atomic)
    }

    /// The server, `fault_server.py`, a resource of this module (run it by hand as its header says).
    /// Arguments: root, control file, request log. Prints its port, then serves until killed (or until
    /// its parent dies).
    static var script: URL {
        get throws {
            guard let url = Bundle.module.url(forResource: "fault_server", withExtension: "py") else {
                throw HTTPTestServerError("fault_server.py is missing from \(Bundle.module.bundlePath)")
            }
            return url
        }
    }
}

/// Bytes appended under a lock.
private final class LockedData: @unchecked Sendable {
    private let lock = NSLock()
    private var data = Data()
    /// Appends `chunk`; returns everything so far.
    func append(_ chunk: Data) -> Data {
        lock.lock()
        defer { lock.unlock() }
        data.append(chunk)
        return data
    }
    var value: Data {
        lock.lock()
        defer { lock.unlock() }
        return data
    }
}
