import Foundation

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
            arguments: { ["-X", "-f", $1] })
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
