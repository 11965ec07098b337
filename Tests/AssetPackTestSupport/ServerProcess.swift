import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Local HTTP servers for tests of ranged downloads: real nginx, Apache httpd and lighttpd (what origins
// look like, each with its own handling of validators; NginxServer.swift, ApacheServer.swift,
// LighttpdServer.swift) and a small Python server that injects faults (truncated bodies, flipped
// bytes, dropped connections, 503s, ignored ranges, capped ranges, weak validators, a file replaced
// mid-download; FaultyHTTPServer.swift and fault_server.py). They log requests in one shape
// (AccessLog.swift). This file holds what they share: starting a server daemon on a free port and
// waiting until it listens, stopping it, and the URLs.

/// Why a test HTTP server could not start or be read.
public struct HTTPTestServerError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, with the server's own output where there is any.
    public var message: String
    /// Creates an error with `message`.
    public init(_ message: String) { self.message = message }
    /// The message.
    public var description: String { message }
}

// MARK: - A server daemon

/// What ``ConfiguredDaemon`` needs to run one kind of server (nginx, Apache httpd, lighttpd): its
/// binary, its configuration for a port, its command line and how it reports a port already taken.
struct DaemonRecipe {
    /// The name in messages (`"Apache httpd"`).
    var name: String
    /// The binary's absolute path.
    var binary: String
    /// How to install it (Debian/Ubuntu).
    var install: String
    /// The configuration file's name in the private directory.
    var configName: String
    /// The configuration, given the private directory (for logs and runtime files) and the port.
    var configuration: (_ directory: TemporaryDirectory, _ port: Int) -> String
    /// The command line, given the private directory and the configuration file's path.
    var arguments: (_ directory: TemporaryDirectory, _ config: String) -> [String]
    /// The directory to serve, checked before anything starts (`nil`: left to the server).
    var root: URL? = nil
    /// What in the server's output shows that its `bind()` failed, so that a server that keeps retrying
    /// (nginx, for 2.5 s) is stopped at once and the next attempt takes another port.
    var bindFailure = "Address already in use"
}

/// A server daemon run in the foreground as a child of the test, on a free port of 127.0.0.1, with
/// its configuration and logs (`error.log`, `access.log`, and `stderr.log` for what it prints) in a
/// private temporary directory: the plumbing ``NginxServer``, ``ApacheServer`` and ``LighttpdServer``
/// share. Starting takes a free port, writes the configuration, runs the server and waits (up to
/// 10 s) until it accepts connections; when another process took the port in between, it tries
/// again with another (3 attempts).
final class ConfiguredDaemon: @unchecked Sendable {
    /// What runs.
    let recipe: DaemonRecipe
    /// The private directory: configuration, logs, runtime files.
    let directory: TemporaryDirectory
    /// The port the server listens on (127.0.0.1).
    let port: Int
    private let lock = NSLock()
    private var process: Process?

    /// Starts the server and waits until it accepts connections.
    /// - Throws: ``HTTPTestServerError`` when the binary is not installed, the root is not a directory,
    ///   or the server does not start; the message quotes the server's output.
    init(_ recipe: DaemonRecipe, label: String) throws {
        guard FileManager.default.isExecutableFile(atPath: recipe.binary) else {
            throw HTTPTestServerError(
                "\(recipe.name) not found at \(recipe.binary): these tests need a real \(recipe.name) "
                    + "(Debian/Ubuntu: \(recipe.install))")
        }
        if let root = recipe.root { try requireDirectory(root, "\(recipe.name) root") }
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
            process.arguments = recipe.arguments(dir, configURL.path)
            process.currentDirectoryURL = dir.url
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = try FileHandle(forWritingTo: dir.appending("stderr.log"))
            process.standardError = process.standardOutput
            do {
                try runWithUnblockedSignals(process)
            } catch {
                throw HTTPTestServerError("cannot run \(recipe.binary): \(error)")
            }
            let bindFailed = { Self.output(dir).contains(recipe.bindFailure) }
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

    /// Stops the server (SIGTERM, then SIGKILL after 5 s) and waits for it to exit. Safe to call twice.
    func stop() {
        lock.lock()
        let running = process
        process = nil
        lock.unlock()
        if let running { terminate(running, timeout: 5) }
    }

    /// The access log the configuration names.
    var accessLogURL: URL { directory.appending("access.log") }
    /// The error log the configuration names.
    var errorLogURL: URL { directory.appending("error.log") }

    /// What the server printed and wrote to its error log.
    static func output(_ directory: TemporaryDirectory) -> String {
        let stderr = (try? String(contentsOf: directory.appending("stderr.log"), encoding: .utf8)) ?? ""
        let log = (try? String(contentsOf: directory.appending("error.log"), encoding: .utf8)) ?? ""
        return [stderr, log].filter { !$0.isEmpty }.joined(separator: "\n")
    }

    /// A double-quoted configuration string (the same escapes suit nginx, Apache and lighttpd).
    static func quoted(_ value: String) -> String {
        "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}

/// Throws unless `url` is a directory (`"<what> <path> is not a directory"`).
func requireDirectory(_ url: URL, _ what: String) throws {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue
    else { throw HTTPTestServerError("\(what) \(url.path) is not a directory") }
}

// MARK: - Processes, ports and URLs

/// `base` + `relativePath` (leading slashes dropped), each component percent-encoded.
func serverURL(_ base: URL, _ relativePath: String) -> URL {
    var allowed = CharacterSet.urlPathAllowed
    allowed.remove(charactersIn: "/;?#%")
    let encoded = relativePath.split(separator: "/", omittingEmptySubsequences: false)
        .map { $0.addingPercentEncoding(withAllowedCharacters: allowed) ?? String($0) }
        .joined(separator: "/")
    let trimmed = encoded.drop { $0 == "/" }
    return URL(string: String(trimmed), relativeTo: base)?.absoluteURL ?? base.appendingPathComponent(relativePath)
}

/// A port on 127.0.0.1 that was free a moment ago (bound to port 0, read back, closed).
func freeLocalPort() throws -> Int {
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

func loopback(port: Int) -> sockaddr_in {
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
func acceptsConnections(port: Int) -> Bool {
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

enum Startup { case listening, exited, timedOut }

/// Polls until `process` accepts connections on `port`, exits (or reports `failed`, and is then
/// stopped), or `timeout` passes.
func waitUntilListening(
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
func runWithUnblockedSignals(_ process: Process) throws {
    var none = sigset_t()
    var previous = sigset_t()
    sigemptyset(&none)
    pthread_sigmask(SIG_SETMASK, &none, &previous)
    defer { pthread_sigmask(SIG_SETMASK, &previous, nil) }
    try process.run()
}

/// SIGTERM, then SIGKILL if `process` has not exited within `timeout`; waits for it.
func terminate(_ process: Process, timeout: TimeInterval) {
    if process.isRunning {
        process.terminate()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(5_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
    }
    process.waitUntilExit()
}
