import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
    public var port: Int { daemon.port }
    /// The server's address, `http://127.0.0.1:PORT/` (`https://` with TLS).
    public var baseURL: URL { URL(string: "\(tls == nil ? "http" : "https")://127.0.0.1:\(port)/")! }
    /// How it serves TLS (`nil`: plain HTTP).
    public let tls: TLS?

    /// TLS for ``NginxServer``: the certificate served and whether HTTP/2 is offered (by ALPN).
    public struct TLS: Sendable {
        /// The certificate and key served (``TestCertificates``).
        public var pair: TestCertificates.Pair
        /// Offer HTTP/2 as well as HTTP/1.1 (`listen … ssl http2`); a client that can picks it.
        public var http2: Bool
        /// TLS with `pair`, HTTP/2 offered when `http2`.
        public init(_ pair: TestCertificates.Pair, http2: Bool) {
            self.pair = pair
            self.http2 = http2
        }
    }
    /// The access log (tab-separated: method, URI, status, body bytes, total bytes, Range or `-`,
    /// protocol).
    public var accessLogURL: URL { daemon.accessLogURL }
    /// nginx's error log.
    public var errorLogURL: URL { daemon.errorLogURL }

    private let daemon: ConfiguredDaemon

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
    ///   - tls: Serve https with this certificate (`nil`: plain http).
    /// - Throws: ``HTTPTestServerError`` when nginx is not installed (`apt-get install nginx-light`),
    ///   or does not start; the message quotes nginx's error output.
    public init(
        root: URL, allowRanges: Bool = true, maxRanges: Int? = nil, rateLimit: Int? = nil, tls: TLS? = nil
    ) throws {
        self.root = root.standardizedFileURL
        self.tls = tls
        let served = self.root
        let ranges =
            (allowRanges ? maxRanges.map { "max_ranges \($0);" } ?? "" : "max_ranges 0;")
            + (rateLimit.map { " limit_rate \($0);" } ?? "")
        let recipe = DaemonRecipe(
            name: "nginx", binary: Self.binary, install: "apt-get install nginx-light", configName: "nginx.conf",
            configuration: {
                Self.configuration(directory: $0, root: served, port: $1, ranges: ranges, tls: tls)
            },
            arguments: { ["-p", $0.path + "/", "-c", $1, "-e", $0.appending("error.log").path] },
            root: root,
            // nginx retries a failed bind() for 2.5 s, so a port taken by someone else (who then answers
            // the probe) shows in the error log first.
            bindFailure: "bind() to")
        daemon = try ConfiguredDaemon(recipe, label: "nginx")
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
    public func resetAccessLog() throws { try emptyLog(accessLogURL) }

    /// Stops nginx (SIGTERM, then SIGKILL after 5 s) and waits for it to exit. Safe to call twice.
    public func stop() { daemon.stop() }

    private static func configuration(
        directory: TemporaryDirectory, root: URL, port: Int, ranges: String, tls: TLS?
    ) -> String {
        func path(_ name: String) -> String { ConfiguredDaemon.quoted(directory.appending(name).path) }
        // Running as root (CI containers), nginx would otherwise switch to `nobody`; as anyone else the
        // directive is ignored with a warning, so it is left out.
        let user = geteuid() == 0 ? "user root;" : ""
        let listen =
            tls.map {
                """
                listen 127.0.0.1:\(port) ssl\($0.http2 ? " http2" : "");
                        ssl_certificate \(ConfiguredDaemon.quoted($0.pair.certificate.path));
                        ssl_certificate_key \(ConfiguredDaemon.quoted($0.pair.key.path));
                """
            } ?? "listen 127.0.0.1:\(port);"
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
                    '$request_method\t$request_uri\t$status\t$body_bytes_sent\t$bytes_sent\t$http_range\t$server_protocol';
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
                    \(listen)
                    root \(ConfiguredDaemon.quoted(root.path));
                }
            }

            """
    }
}
