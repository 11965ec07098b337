import Foundation

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
            arguments: { ["-D", "-f", $1] })
        daemon = try ConfiguredDaemon(recipe, label: "lighttpd")
    }

    deinit { stop() }

    /// The URL of `relativePath` on this server, percent-encoded as needed.
    public func url(_ relativePath: String) -> URL { serverURL(baseURL, relativePath) }

    /// The access log's complete lines, oldest first (buffered by lighttpd: pass `count` to wait).
    public func accessLog(waitingFor count: Int = 0, timeout: TimeInterval = 10) throws -> [AccessLogLine] {
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
