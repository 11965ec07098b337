import AssetPackCore
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

// Local HTTP servers for tests of ranged downloads: real nginx, Apache httpd and lighttpd (what origins
// look like, each with its own handling of validators) and a small Python server that injects faults
// (truncated bodies, flipped bytes, dropped connections, 503s, ignored ranges, capped ranges, weak
// validators, a file replaced mid-download).

/// Why a test HTTP server could not start or be read.
public struct HTTPTestServerError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, with the server's own output where there is any.
    public var message: String
    /// Creates an error with `message`.
    public init(_ message: String) { self.message = message }
    /// The message.
    public var description: String { message }
}

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

    /// Creates a line.
    public init(method: String, uri: String, status: Int, bodyBytes: Int, totalBytes: Int, range: String?) {
        self.method = method
        self.uri = uri
        self.status = status
        self.bodyBytes = bodyBytes
        self.totalBytes = totalBytes
        self.range = range
    }

    /// Parses the tab-separated log both servers write (method, URI, status, body bytes, total bytes,
    /// Range or `-`). Only complete lines count: a final line without its newline is still being
    /// written and is skipped.
    static func parse(_ text: String) throws -> [AccessLogLine] {
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        lines.removeLast()  // the text after the last newline: empty, or a partial line
        return try lines.filter { !$0.isEmpty }.map { line in
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 6, let status = Int(fields[2]), let body = Int(fields[3]),
                let total = Int(fields[4])
            else { throw HTTPTestServerError("unreadable access log line: \(line.debugDescription)") }
            return AccessLogLine(
                method: fields[0], uri: fields[1], status: status, bodyBytes: body, totalBytes: total,
                range: fields[5] == "-" ? nil : fields[5])
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

// MARK: - nginx

/// A real nginx (Debian `nginx-light`, `/usr/sbin/nginx`) serving a directory on 127.0.0.1, as a
/// child process of the test, with its configuration, logs and temporary files in a private
/// temporary directory. Stopped by ``stop()`` or when released.
///
/// What it answers, as observed with nginx 1.22: a strong `ETag` `"<hex mtime>-<hex size>"`
/// (lowercase, no leading zeros), `Last-Modified`, `206` with `Content-Range: bytes a-b/total` for
/// one range (no `Accept-Ranges` on a 206), `Accept-Ranges: bytes` on a `200` only while ranges are
/// allowed, `416` with `Content-Range: bytes */total` past the end, and `If-Range` honoured (a
/// mismatch gives `200` and the whole file).
public final class NginxServer: @unchecked Sendable {
    /// The nginx binary.
    public static let binary = "/usr/sbin/nginx"

    /// The directory served at `/`.
    public let root: URL
    /// The port nginx listens on (127.0.0.1).
    public let port: Int
    /// The server's address, `http://127.0.0.1:PORT/`.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)/")! }
    /// The access log (tab-separated: method, URI, status, body bytes, total bytes, Range or `-`).
    public var accessLogURL: URL { directory.appending("access.log") }
    /// nginx's error log.
    public var errorLogURL: URL { directory.appending("error.log") }

    private let directory: TemporaryDirectory
    private let lock = NSLock()
    private var process: Process?

    /// Starts nginx serving `root` on a free port and waits (up to 10 s) until it accepts connections.
    ///
    /// - Parameters:
    ///   - root: The directory to serve.
    ///   - allowRanges: `false` sets `max_ranges 0`: nginx then ignores `Range` and answers `200` with
    ///     the whole file (and no `Accept-Ranges` header).
    ///   - maxRanges: With ranges allowed, nginx's `max_ranges` (`nil`: nginx's default, unlimited, so
    ///     a multi-range request gets `multipart/byteranges`; `1`: a multi-range request gets `200`).
    ///   - rateLimit: nginx's `limit_rate`, bytes per second per response (`nil`: unlimited), to
    ///     make a transfer last long enough to interrupt.
    /// - Throws: ``HTTPTestServerError`` when nginx is not installed (`apt-get install nginx-light`),
    ///   or does not start; the message quotes nginx's error output.
    public init(root: URL, allowRanges: Bool = true, maxRanges: Int? = nil, rateLimit: Int? = nil) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.binary) else {
            throw HTTPTestServerError(
                "nginx not found at \(Self.binary): these tests need a real nginx "
                    + "(Debian/Ubuntu: apt-get install nginx-light)")
        }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root.path, isDirectory: &isDirectory), isDirectory.boolValue
        else { throw HTTPTestServerError("nginx root \(root.path) is not a directory") }
        self.root = root.standardizedFileURL
        directory = TemporaryDirectory("nginx")
        let dir = directory
        let ranges =
            (allowRanges ? maxRanges.map { "max_ranges \($0);" } ?? "" : "max_ranges 0;")
            + (rateLimit.map { " limit_rate \($0);" } ?? "")

        var lastFailure = ""
        for _ in 0..<3 {
            let port = try freeLocalPort()
            let config = Self.configuration(directory: dir, root: self.root, port: port, ranges: ranges)
            let configURL = dir.appending("nginx.conf")
            try Data(config.utf8).write(to: configURL)
            for name in ["error.log", "stderr.log"] { try Data().write(to: dir.appending(name)) }

            let process = Process()
            process.executableURL = URL(fileURLWithPath: Self.binary)
            process.arguments = ["-p", dir.path + "/", "-c", configURL.path, "-e", dir.appending("error.log").path]
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = FileHandle.nullDevice
            process.standardError = try FileHandle(forWritingTo: dir.appending("stderr.log"))
            do {
                try runWithUnblockedSignals(process)
            } catch {
                throw HTTPTestServerError("cannot run \(Self.binary): \(error)")
            }
            // nginx retries a failed bind() for 2.5 s, so a port taken by someone else (who then answers
            // the probe) shows in the error log first.
            let bindFailed = { Self.output(dir).contains("bind() to") }
            switch waitUntilListening(process, port: port, timeout: 10, failed: bindFailed) {
            case .listening:
                self.port = port
                self.process = process
                return
            case .exited:
                lastFailure = Self.output(dir)
                // Another process took the port between our probe and nginx's bind: try another.
                if lastFailure.contains("Address already in use") { continue }
                throw HTTPTestServerError(
                    "nginx exited at startup (status \(process.terminationStatus)):\n\(lastFailure)")
            case .timedOut:
                terminate(process, timeout: 2)
                throw HTTPTestServerError(
                    "nginx did not accept connections on port \(port) within 10 s:\n\(Self.output(dir))")
            }
        }
        throw HTTPTestServerError("nginx could not bind a free port in 3 attempts:\n\(lastFailure)")
    }

    deinit { stop() }

    /// The URL of `relativePath` (for example `"packs/a.pack"`) on this server, percent-encoded as needed.
    public func url(_ relativePath: String) -> URL {
        serverURL(baseURL, relativePath)
    }

    /// The access log's complete lines, oldest first.
    ///
    /// nginx writes each line (unbuffered) just after a response's last byte, so a client can see its
    /// response end a moment before the line exists: pass `count` to wait (up to `timeout`) until there
    /// are at least that many lines. A final partial line is skipped.
    public func accessLog(waitingFor count: Int = 0, timeout: TimeInterval = 2) throws -> [AccessLogLine] {
        try AccessLogLine.read(accessLogURL, waitingFor: count, timeout: timeout)
    }

    /// Empties the access log (nginx appends with `O_APPEND`, so it keeps writing at the new end).
    public func resetAccessLog() throws {
        guard truncate(accessLogURL.path, 0) == 0 else {
            throw HTTPTestServerError("cannot truncate \(accessLogURL.path): \(String(cString: strerror(errno)))")
        }
    }

    /// Stops nginx (SIGTERM, then SIGKILL after 5 s) and waits for it to exit. Safe to call twice.
    public func stop() {
        lock.lock()
        let running = process
        process = nil
        lock.unlock()
        if let running { terminate(running, timeout: 5) }
    }

    private static func configuration(directory: TemporaryDirectory, root: URL, port: Int, ranges: String)
        -> String
    {
        func path(_ name: String) -> String { quoted(directory.appending(name).path) }
        // Running as root (CI containers), nginx would otherwise switch to `nobody`; as anyone else the
        // directive is ignored with a warning, so it is left out.
        let user = geteuid() == 0 ? "user root;" : ""
        return """
            daemon off;
            master_process off;
            worker_processes 1;
            \(user)
            pid \(path("nginx.pid"));
            lock_file \(path("nginx.lock"));
            error_log \(path("error.log")) info;
            events { worker_connections 256; }
            http {
                types { }
                default_type application/octet-stream;
                log_format assetpack_test
                    '$request_method\t$request_uri\t$status\t$body_bytes_sent\t$bytes_sent\t$http_range';
                access_log \(path("access.log")) assetpack_test;
                client_body_temp_path \(path("client_body"));
                proxy_temp_path \(path("proxy"));
                fastcgi_temp_path \(path("fastcgi"));
                uwsgi_temp_path \(path("uwsgi"));
                scgi_temp_path \(path("scgi"));
                sendfile on;
                etag on;
                \(ranges)
                server {
                    listen 127.0.0.1:\(port);
                    root \(quoted(root.path));
                }
            }

            """
    }

    /// nginx's startup output: what it printed on standard error and its error log.
    private static func output(_ directory: TemporaryDirectory) -> String {
        let stderr = (try? String(contentsOf: directory.appending("stderr.log"), encoding: .utf8)) ?? ""
        let log = (try? String(contentsOf: directory.appending("error.log"), encoding: .utf8)) ?? ""
        return [stderr, log].filter { !$0.isEmpty }.joined(separator: "\n")
    }

    /// A double-quoted nginx configuration string.
    private static func quoted(_ value: String) -> String {
        "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}

// MARK: - Apache httpd and lighttpd

/// What a configured server daemon needs from ``ConfiguredDaemon``: its binary, its command line
/// and its configuration for a port.
struct DaemonRecipe {
    /// The name in messages (`"Apache httpd"`).
    var name: String
    var binary: String
    /// How to install it (Debian/Ubuntu).
    var install: String
    /// The configuration file's name in the private directory.
    var configName: String
    /// The configuration, given the private directory (for logs and runtime files) and the port.
    var configuration: (_ directory: TemporaryDirectory, _ port: Int) -> String
    /// The command line, given the configuration file's path.
    var arguments: (_ config: String) -> [String]
}

/// A server daemon (Apache httpd, lighttpd) run in the foreground as a child of the test, on a free
/// port of 127.0.0.1, with its configuration and logs in a private temporary directory: the
/// plumbing ``ApacheServer`` and ``LighttpdServer`` share.
final class ConfiguredDaemon: @unchecked Sendable {
    let recipe: DaemonRecipe
    let directory: TemporaryDirectory
    let port: Int
    private let lock = NSLock()
    private var process: Process?

    init(_ recipe: DaemonRecipe, label: String) throws {
        guard FileManager.default.isExecutableFile(atPath: recipe.binary) else {
            throw HTTPTestServerError(
                "\(recipe.name) not found at \(recipe.binary): these tests need a real \(recipe.name) "
                    + "(Debian/Ubuntu: \(recipe.install))")
        }
        self.recipe = recipe
        let dir = TemporaryDirectory(label)
        directory = dir
        var lastFailure = ""
        for _ in 0..<3 {
            let port = try freeLocalPort()
            let configURL = dir.appending(recipe.configName)
            try Data(recipe.configuration(dir, port).utf8).write(to: configURL)
            for name in ["error.log", "stderr.log", "access.log"] { try Data().write(to: dir.appending(name)) }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: recipe.binary)
            process.arguments = recipe.arguments(configURL.path)
            process.currentDirectoryURL = dir.url
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = try FileHandle(forWritingTo: dir.appending("stderr.log"))
            process.standardError = process.standardOutput
            do {
                try runWithUnblockedSignals(process)
            } catch {
                throw HTTPTestServerError("cannot run \(recipe.binary): \(error)")
            }
            let bindFailed = { Self.output(dir).contains("Address already in use") }
            switch waitUntilListening(process, port: port, timeout: 10, failed: bindFailed) {
            case .listening:
                self.port = port
                self.process = process
                return
            case .exited:
                lastFailure = Self.output(dir)
                // Another process took the port between our probe and the server's bind: try another.
                if lastFailure.contains("Address already in use") { continue }
                throw HTTPTestServerError(
                    "\(recipe.name) exited at startup (status \(process.terminationStatus)):\n\(lastFailure)")
            case .timedOut:
                terminate(process, timeout: 2)
                throw HTTPTestServerError(
                    "\(recipe.name) did not accept connections on port \(port) within 10 s:\n\(Self.output(dir))")
            }
        }
        throw HTTPTestServerError("\(recipe.name) could not bind a free port in 3 attempts:\n\(lastFailure)")
    }

    deinit { stop() }

    func stop() {
        lock.lock()
        let running = process
        process = nil
        lock.unlock()
        if let running { terminate(running, timeout: 5) }
    }

    var accessLogURL: URL { directory.appending("access.log") }

    /// What the server printed and wrote to its error log.
    static func output(_ directory: TemporaryDirectory) -> String {
        let stderr = (try? String(contentsOf: directory.appending("stderr.log"), encoding: .utf8)) ?? ""
        let log = (try? String(contentsOf: directory.appending("error.log"), encoding: .utf8)) ?? ""
        return [stderr, log].filter { !$0.isEmpty }.joined(separator: "\n")
    }

    /// A double-quoted configuration string (the same escapes suit Apache and lighttpd).
    static func quoted(_ value: String) -> String {
        "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}

/// A real Apache httpd (Debian `apache2`, `/usr/sbin/apache2`) serving a directory on 127.0.0.1, run
/// in the foreground as one process (`-X`, so that it keeps the test's user and reads what the test
/// can read, root included), with its configuration and logs in a private temporary directory.
/// Stopped by ``stop()`` or when released.
///
/// What it answers, as observed with Apache 2.4: `ETag` `"<hex size>-<hex mtime in µs>"`, **weak**
/// (`W/"…"`) while the file's mtime is less than a second old, `Last-Modified`, `206` with
/// `Content-Range`, and `If-Range` honoured only for a strong validator: a weak ETag, or a
/// `Last-Modified` less than a second before the request, gets `200` and the whole file
/// (RFC 9110 §13.1.5), which is what an install right after a publish meets.
public final class ApacheServer: @unchecked Sendable {
    /// The Apache binary.
    public static let binary = "/usr/sbin/apache2"
    /// Apache's loadable modules (Debian).
    public static let modules = "/usr/lib/apache2/modules"

    /// The directory served at `/`.
    public let root: URL
    /// The port Apache listens on (127.0.0.1).
    public var port: Int { daemon.port }
    /// The server's address, `http://127.0.0.1:PORT/`.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)/")! }
    /// The access log, in ``NginxServer``'s tab-separated shape (the URI is Apache's decoded `%U%q`).
    public var accessLogURL: URL { daemon.accessLogURL }

    private let daemon: ConfiguredDaemon

    /// Starts Apache serving `root` on a free port and waits (up to 10 s) until it accepts connections.
    /// - Throws: ``HTTPTestServerError`` when Apache is not installed (`apt-get install apache2`), or
    ///   does not start; the message quotes its error output.
    public init(root: URL) throws {
        self.root = root.standardizedFileURL
        let served = self.root.path
        let recipe = DaemonRecipe(
            name: "Apache httpd", binary: Self.binary, install: "apt-get install apache2", configName: "httpd.conf",
            configuration: { Self.configuration(directory: $0, root: served, port: $1) },
            arguments: { ["-X", "-f", $0] })
        daemon = try ConfiguredDaemon(recipe, label: "apache")
    }

    deinit { stop() }

    /// The URL of `relativePath` on this server, percent-encoded as needed.
    public func url(_ relativePath: String) -> URL { serverURL(baseURL, relativePath) }

    /// The access log's complete lines, oldest first (Apache writes each when its response ends:
    /// pass `count` to wait for them).
    public func accessLog(waitingFor count: Int = 0, timeout: TimeInterval = 2) throws -> [AccessLogLine] {
        try AccessLogLine.read(accessLogURL, waitingFor: count, timeout: timeout)
    }

    /// Stops Apache (SIGTERM, then SIGKILL after 5 s) and waits for it to exit. Safe to call twice.
    public func stop() { daemon.stop() }

    private static func configuration(directory: TemporaryDirectory, root: String, port: Int) -> String {
        func path(_ name: String) -> String { ConfiguredDaemon.quoted(directory.appending(name).path) }
        let q = ConfiguredDaemon.quoted
        return """
            ServerRoot \(q(directory.path))
            Listen 127.0.0.1:\(port)
            LoadModule mpm_event_module \(q(modules + "/mod_mpm_event.so"))
            LoadModule authz_core_module \(q(modules + "/mod_authz_core.so"))
            ServerName 127.0.0.1
            PidFile \(path("httpd.pid"))
            DefaultRuntimeDir \(q(directory.path))
            Mutex file:\(directory.path) default
            ErrorLog \(path("error.log"))
            LogLevel warn
            LogFormat "%m\\t%U%q\\t%>s\\t%B\\t%O\\t%{Range}i" assetpack_test
            CustomLog \(path("access.log")) assetpack_test
            KeepAlive On
            DocumentRoot \(q(root))
            <Directory \(q(root))>
                Require all granted
            </Directory>

            """
    }
}

/// A real lighttpd (Debian `lighttpd`, `/usr/sbin/lighttpd`) serving a directory on 127.0.0.1 in the
/// foreground (`-D`), with its configuration and logs in a private temporary directory. Stopped by
/// ``stop()`` or when released.
///
/// What it answers, as observed with lighttpd 1.4.69: an `ETag` that is a hash of inode, mtime and
/// size, `Last-Modified`, `206` with `Content-Range`, `If-Range` honoured by exact match. Two
/// settings matter and are made here: lighttpd sends **neither `ETag` nor `Last-Modified`** for a
/// file whose type `mimetype.assign` does not name (so every file is named
/// `application/octet-stream`), and its default stat cache reports a replaced file's old validators
/// for about a second (so the cache follows changes through inotify). The access log is buffered:
/// lines can appear a second after their response.
public final class LighttpdServer: @unchecked Sendable {
    /// The lighttpd binary.
    public static let binary = "/usr/sbin/lighttpd"

    /// The directory served at `/`.
    public let root: URL
    /// The port lighttpd listens on (127.0.0.1).
    public var port: Int { daemon.port }
    /// The server's address, `http://127.0.0.1:PORT/`.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)/")! }
    /// The access log, in ``NginxServer``'s tab-separated shape (the URI decoded).
    public var accessLogURL: URL { daemon.accessLogURL }

    private let daemon: ConfiguredDaemon

    /// Starts lighttpd serving `root` on a free port and waits (up to 10 s) until it accepts connections.
    /// - Parameter assignTypes: `false` leaves out `mimetype.assign`: lighttpd then sends no
    ///   validators at all.
    /// - Throws: ``HTTPTestServerError`` when lighttpd is not installed (`apt-get install lighttpd`),
    ///   or does not start; the message quotes its error output.
    public init(root: URL, assignTypes: Bool = true) throws {
        self.root = root.standardizedFileURL
        let served = self.root.path
        let recipe = DaemonRecipe(
            name: "lighttpd", binary: Self.binary, install: "apt-get install lighttpd", configName: "lighttpd.conf",
            configuration: { Self.configuration(directory: $0, root: served, port: $1, assignTypes: assignTypes) },
            arguments: { ["-D", "-f", $0] })
        daemon = try ConfiguredDaemon(recipe, label: "lighttpd")
    }

    deinit { stop() }

    /// The URL of `relativePath` on this server, percent-encoded as needed.
    public func url(_ relativePath: String) -> URL { serverURL(baseURL, relativePath) }

    /// The access log's complete lines, oldest first (buffered by lighttpd: pass `count` to wait).
    public func accessLog(waitingFor count: Int = 0, timeout: TimeInterval = 3) throws -> [AccessLogLine] {
        try AccessLogLine.read(accessLogURL, waitingFor: count, timeout: timeout)
    }

    /// Stops lighttpd (SIGTERM, then SIGKILL after 5 s) and waits for it to exit. Safe to call twice.
    public func stop() { daemon.stop() }

    private static func configuration(directory: TemporaryDirectory, root: String, port: Int, assignTypes: Bool)
        -> String
    {
        func path(_ name: String) -> String { ConfiguredDaemon.quoted(directory.appending(name).path) }
        return """
            server.document-root = \(ConfiguredDaemon.quoted(root))
            server.bind = "127.0.0.1"
            server.port = \(port)
            server.errorlog = \(path("error.log"))
            server.modules = ("mod_accesslog")
            server.stat-cache-engine = "inotify"
            accesslog.filename = \(path("access.log"))
            accesslog.format = "%m\\t%U%q\\t%>s\\t%b\\t%O\\t%{Range}i"
            \(assignTypes ? "mimetype.assign = (\"\" => \"application/octet-stream\")" : "")

            """
    }
}

// MARK: - Fault-injecting server

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
        /// Apache's first second after a change, for the first `requests` requests: the ETag is weak
        /// (`W/"…"`), and `If-Range` never matches (a weak ETag never does; a date that recent is weak
        /// too), so a ranged request with `If-Range` gets `200` and the whole file. Later requests get
        /// the same ETag, strong.
        case weakValidators(requests: Int)
        /// `If-Range` never matches, whatever it holds: a ranged request with `If-Range` gets `200`
        /// and the whole file (a server, or a cache in front of one, that trusts no validator).
        case refuseIfRange
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
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root.path, isDirectory: &isDirectory), isDirectory.boolValue
        else { throw HTTPTestServerError("server root \(root.path) is not a directory") }
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
    public func requests(waitingFor count: Int = 0, timeout: TimeInterval = 2) throws -> [AccessLogLine] {
        try AccessLogLine.read(requestLogURL, waitingFor: count, timeout: timeout)
    }

    /// How many requests the log holds (see ``requests(waitingFor:timeout:)``).
    public var requestCount: Int {
        get throws { try requests().count }
    }

    /// Empties the request log.
    public func resetRequests() throws {
        guard truncate(requestLogURL.path, 0) == 0 else {
            throw HTTPTestServerError("cannot truncate \(requestLogURL.path): \(String(cString: strerror(errno)))")
        }
    }

    /// Stops the server and waits for it to exit. Safe to call twice.
    public func stop() {
        lock.lock()
        let first = !stopped
        stopped = true
        lock.unlock()
        if first { terminate(process, timeout: 5) }
    }

    private struct Control: Encodable {
        var generation: Int
        var mode: String
        var afterBytes = 0
        var times = 0
        var offset = 0
        var requests = 0
        var size: UInt64 = 0
        var rate = 0
        var cap = 0
    }

    private static func writeControl(_ fault: Fault, generation: Int, to file: URL) throws {
        var control = Control(generation: generation, mode: "none")
        switch fault {
        case .none: break
        case .truncateBody(let afterBytes, let times):
            control.mode = "truncate"
            control.afterBytes = afterBytes
            control.times = times
        case .corruptByte(let offset):
            control.mode = "corrupt"
            control.offset = offset
        case .dropConnectionBeforeHeaders(let times):
            control.mode = "drop"
            control.times = times
        case .status503(let times):
            control.mode = "status503"
            control.times = times
        case .ignoreRange: control.mode = "ignoreRange"
        case .changeETagAfter(let requests):
            control.mode = "changeETag"
            control.requests = requests
        case .claimSize(let size):
            control.mode = "claimSize"
            control.size = size
        case .drip(let rate):
            control.mode = "drip"
            control.rate = rate
        case .stallAfter(let bytes):
            control.mode = "stall"
            control.afterBytes = bytes
        case .capRanges(let bytes):
            control.mode = "cap"
            control.cap = bytes
        case .weakValidators(let requests):
            control.mode = "weak"
            control.requests = requests
        case .refuseIfRange: control.mode = "refuseIfRange"
        }
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

// MARK: - Shared plumbing

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

/// `base` + `relativePath` (leading slashes dropped), each component percent-encoded.
private func serverURL(_ base: URL, _ relativePath: String) -> URL {
    var allowed = CharacterSet.urlPathAllowed
    allowed.remove(charactersIn: "/;?#%")
    let encoded = relativePath.split(separator: "/", omittingEmptySubsequences: false)
        .map { $0.addingPercentEncoding(withAllowedCharacters: allowed) ?? String($0) }
        .joined(separator: "/")
    let trimmed = encoded.drop { $0 == "/" }
    return URL(string: String(trimmed), relativeTo: base)?.absoluteURL ?? base.appendingPathComponent(relativePath)
}

/// A port on 127.0.0.1 that was free a moment ago (bound to port 0, read back, closed).
private func freeLocalPort() throws -> Int {
    #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
    #endif
    guard fd >= 0 else { throw HTTPTestServerError("socket() failed: \(String(cString: strerror(errno)))") }
    defer { close(fd) }
    var address = loopback(port: 0)
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard bound == 0 else { throw HTTPTestServerError("bind(127.0.0.1:0) failed: \(String(cString: strerror(errno)))") }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard named == 0 else { throw HTTPTestServerError("getsockname failed: \(String(cString: strerror(errno)))") }
    return Int(UInt16(bigEndian: address.sin_port))
}

private func loopback(port: Int) -> sockaddr_in {
    var address = sockaddr_in()
    #if canImport(Darwin)
        address.sin_len = UInt8(MemoryLayout<sockaddr_in>.size)
    #endif
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = UInt16(port).bigEndian
    address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
    return address
}

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
private func acceptsConnections(port: Int) -> Bool {
    #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
    #endif
    guard fd >= 0 else { return false }
    defer { close(fd) }
    var address = loopback(port: port)
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    } == 0
}

private enum Startup { case listening, exited, timedOut }

/// Polls until `process` accepts connections on `port`, exits (or reports `failed`, and is then
/// stopped), or `timeout` passes.
private func waitUntilListening(
    _ process: Process, port: Int, timeout: TimeInterval, failed: () -> Bool = { false }
) -> Startup {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if !process.isRunning || failed() {
            terminate(process, timeout: 2)
            return .exited
        }
        if acceptsConnections(port: port) {
            // A process that lost the port race exits or reports it; make sure the listener is ours.
            usleep(20_000)
            if process.isRunning && !failed() { return .listening }
            terminate(process, timeout: 2)
            return .exited
        }
        usleep(10_000)
    }
    return .timedOut
}

/// Runs `process` with no signal blocked.
///
/// A child inherits the spawning thread's signal mask, and Swift Testing runs tests on libdispatch
/// worker threads, which block SIGTERM, SIGINT, SIGHUP, SIGQUIT and more: spawned from there, nginx
/// (single process) and Python would never see `Process.terminate()`'s SIGTERM.
private func runWithUnblockedSignals(_ process: Process) throws {
    var none = sigset_t()
    var previous = sigset_t()
    sigemptyset(&none)
    pthread_sigmask(SIG_SETMASK, &none, &previous)
    defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
    try process.run()
}

/// SIGTERM, then SIGKILL if `process` has not exited within `timeout`; waits for it.
private func terminate(_ process: Process, timeout: TimeInterval) {
    if process.isRunning {
        process.terminate()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(5_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
    process.waitUntilExit()
}
