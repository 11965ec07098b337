import AssetPackCore
import Foundation

/// Runs the built `assetpack` binary.
public enum CLI {
    /// The result of one run.
    public struct Run: Sendable {
        /// Exit status.
        public var status: Int32
        /// Standard output bytes.
        public var stdout: [UInt8]
        /// Standard error text.
        public var stderr: String
        /// Whether the process was ended by a signal (a crash, or our timeout) rather than exiting.
        public var signaled: Bool
        /// Whether the run was killed for exceeding its time limit.
        public var timedOut: Bool
        /// Standard output as text.
        public var text: String { String(decoding: stdout, as: UTF8.self) }
    }

    /// The binary: `$ASSETPACK_BIN`, else `assetpack` beside the test bundle.
    public static var binary: URL {
        if let explicit = ProcessInfo.processInfo.environment["ASSETPACK_BIN"] { return URL(fileURLWithPath: explicit) }
        var dir = Bundle.main.bundleURL
        for _ in 0..<3 {
            let candidate = dir.appendingPathComponent("assetpack")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            dir = dir.deletingLastPathComponent()
        }
        let argv0 = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        return argv0.appendingPathComponent("assetpack")
    }

    /// Runs `assetpack` (or `executable`) with `arguments`, the password (if any) in `$ASSETPACK_PASSWORD`,
    /// extra environment, and no terminal on standard input.
    ///
    /// A container packed here uses scrypt N = 2^10 (`--scrypt-cost 10` is added) unless `cheapKDF`
    /// is false or the arguments choose a cost or a key file. At the default 2^15 every open costs
    /// ~70 ms and 32 MiB, and those opens were a quarter of the fast tier's CPU; the code path is
    /// the same at every cost. `ScryptCostCLITests` packs with `cheapKDF: false`.
    public static func run(
        _ arguments: [String], password: String? = nil, environment: [String: String] = [:], timeout: Double = 120,
        executable: String? = nil, cheapKDF: Bool = true, workingDirectory: URL? = nil
    ) throws -> Run {
        let process = Process()
        process.executableURL = executable.map { URL(fileURLWithPath: $0) } ?? binary
        if let workingDirectory { process.currentDirectoryURL = workingDirectory }
        process.arguments = executable == nil && cheapKDF ? withCheapKDF(arguments) : arguments
        var env = ProcessInfo.processInfo.environment
        // The credential comes only from what the test gives (the CLI reads these three, as the plugin does).
        for name in ["ASSETPACK_PASSWORD", "ASSETPACK_PASSWORD_FILE", "ASSETPACK_KEY_FILE"] {
            env.removeValue(forKey: name)
        }
        if let password { env["ASSETPACK_PASSWORD"] = password }
        // No source status cache (a folder that cannot exist) unless the test gives one: a re-pack
        // then reads every source, whatever the age of the test's files.
        env["XDG_CACHE_HOME"] = "/dev/null/no-cache"
        env.merge(environment) { $1 }
        process.environment = env
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let pid = process.processIdentifier
        let timedOut = Counter()
        let watchdog = DispatchWorkItem {
            timedOut.increment()
            kill(pid, SIGKILL)
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: watchdog)
        defer { watchdog.cancel() }
        // Drain both pipes concurrently so a large output cannot deadlock the child.
        nonisolated(unsafe) var errData = Data()
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async {
            errData = err.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        watchdog.cancel()
        return Run(
            status: process.terminationStatus, stdout: [UInt8](outData),
            stderr: String(decoding: errData, as: UTF8.self),
            signaled: process.terminationReason == .uncaughtSignal, timedOut: timedOut.value > 0)
    }
}

extension CLI {
    /// `arguments` with `--scrypt-cost 10` added (right after `pack`, before any `--`) when they pack
    /// a container at the default cost without a key file.
    public static func withCheapKDF(_ arguments: [String]) -> [String] {
        let options = arguments.prefix { $0 != "--" }
        let names = options.map { $0.split(separator: "=", maxSplits: 1).first.map(String.init) ?? $0 }
        let container =
            options.contains("--format=container")
            || options.indices.contains { options[$0] == "--format" && options.dropFirst($0 + 1).first == "container" }
        let chosen = names.contains("--scrypt-cost") || names.contains("--key-file")
        guard arguments.first == "pack", container, !chosen else { return arguments }
        return ["pack", "--scrypt-cost", "10"] + arguments.dropFirst()
    }

    /// What an interrupted run left.
    public struct Interrupted: Sendable {
        /// Whether a temporary (a name starting with `.assetpack-tmp-`) appeared before the signal.
        public var sawTemporary: Bool
        /// Whether the process died of exactly `signal`.
        public var diedOfSignal: Bool
        /// The folder's names afterwards, sorted.
        public var left: [String]
        /// Everything the process wrote to stderr (on a terminal: the screen, `\n` as `\r\n`).
        public var stderr: String
    }

    /// Starts `assetpack ARGS` (no input, output discarded), kills it with SIGKILL after
    /// `milliseconds`, and waits for it: a crash at that point, for the tests that require an
    /// install to leave the old version or the new one whole.
    public static func killed(_ arguments: [String], afterMilliseconds milliseconds: Int) throws {
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        usleep(useconds_t(milliseconds * 1000))
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    /// A helper's command failed.
    public struct CLIError: Error, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// `assetpack keygen --out DIR/NAME` for each name (NAME.key and NAME.pub in `dir`).
    public static func keygen(_ names: [String], in dir: TemporaryDirectory) throws {
        for name in names {
            let run = try run(["keygen", "--out", dir.appending(name).path, "--quiet"])
            guard run.status == 0 else { throw CLIError("keygen \(name) failed: \(run.stderr)") }
        }
    }

    /// Runs `assetpack ARGS` with the password in `$ASSETPACK_PASSWORD`, waits until a temporary
    /// file appears in `folder` (or, given `growing`, until that file grew: a container re-pack
    /// appending in place; and, with `terminal`, until the progress bar was drawn), sends
    /// `signal`, and reports what the process and folder show. With `terminal`, stderr is a
    /// pseudo-terminal, so the command draws its progress bar there. `delay` (µs) waits that
    /// much longer before the signal, to hit a later point of the write.
    public static func interruptWhileWriting(
        _ arguments: [String], password: String, in folder: URL, signal: Int32, terminal: Bool = false,
        growing: URL? = nil, after delay: useconds_t = 0
    ) throws -> Interrupted {
        let initialSize = growing.flatMap { try? FileManager.default.attributesOfItem(atPath: $0.path)[.size] as? Int }
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(["ASSETPACK_PASSWORD": password]) { $1 }
        process.standardInput = FileHandle.nullDevice
        let readEnd: Int32
        let writeEnd: Int32
        if terminal {
            (readEnd, writeEnd) = try PseudoTerminal.open()
        } else {
            var ends: [Int32] = [0, 0]
            precondition(pipe(&ends) == 0, "pipe failed")
            readEnd = ends[0]
            writeEnd = ends[1]
        }
        process.standardError = FileHandle(fileDescriptor: writeEnd, closeOnDealloc: false)
        let output = Output()
        let reader = Thread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let n = read(readEnd, &buffer, buffer.count)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }  // EOF, or EIO once a terminal's last writer closed it
                output.append(buffer[..<n])
            }
            output.finish()
        }
        reader.start()
        defer { close(readEnd) }
        do { try process.run() } catch {
            close(writeEnd)
            output.waitUntilFinished()
            throw error
        }
        close(writeEnd)
        let deadline = Date().addingTimeInterval(60)
        var sawTemporary = false
        while Date() < deadline, process.isRunning {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
            if names.contains(where: { $0.hasPrefix(".assetpack-tmp-") }) { sawTemporary = true }
            if let growing, let initialSize,
                let size = try? FileManager.default.attributesOfItem(atPath: growing.path)[.size] as? Int,
                size > initialSize
            {
                sawTemporary = true
            }
            if sawTemporary && (!terminal || output.text.contains("\r[")) { break }
            usleep(2000)
        }
        if delay > 0 { usleep(delay) }
        kill(process.processIdentifier, signal)
        process.waitUntilExit()
        output.waitUntilFinished()
        return Interrupted(
            sawTemporary: sawTemporary,
            diedOfSignal: process.terminationReason == .uncaughtSignal && process.terminationStatus == signal,
            left: try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted(), stderr: output.text)
    }

    /// A pseudo-terminal pair through glibc's `posix_openpt` family (declared only under
    /// `_XOPEN_SOURCE`, which the Glibc module does not set, so looked up by name).
    private enum PseudoTerminal {
        typealias IntCall = @convention(c) (Int32) -> Int32
        typealias NameCall = @convention(c) (Int32, UnsafeMutablePointer<CChar>, Int) -> Int32

        static func function<T>(_ name: String, as type: T.Type) -> T {
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else {
                preconditionFailure("\(name) not found")
            }
            return unsafeBitCast(symbol, to: type)
        }

        /// The controlling side (read) and the terminal side (a process's stderr).
        static func open() throws -> (Int32, Int32) {
            let primary = function("posix_openpt", as: IntCall.self)(O_RDWR | O_NOCTTY)
            guard primary >= 0, function("grantpt", as: IntCall.self)(primary) == 0,
                function("unlockpt", as: IntCall.self)(primary) == 0
            else { throw CocoaError(.fileReadUnknown) }
            var name = [CChar](repeating: 0, count: 128)
            guard function("ptsname_r", as: NameCall.self)(primary, &name, name.count) == 0 else {
                throw CocoaError(.fileReadUnknown)
            }
            let path = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            let terminal = Glibc.open(path, O_RDWR | O_NOCTTY)
            guard terminal >= 0 else { throw CocoaError(.fileReadUnknown) }
            return (primary, terminal)
        }
    }

    /// Bytes a reader thread collects, read by another.
    private final class Output: @unchecked Sendable {
        private let condition = NSCondition()
        private var bytes: [UInt8] = []
        private var finished = false

        func append(_ more: ArraySlice<UInt8>) {
            condition.lock()
            bytes += more
            condition.unlock()
        }

        func finish() {
            condition.lock()
            finished = true
            condition.broadcast()
            condition.unlock()
        }

        func waitUntilFinished() {
            condition.lock()
            while !finished { condition.wait() }
            condition.unlock()
        }

        var text: String {
            condition.lock()
            defer { condition.unlock() }
            return String(decoding: bytes, as: UTF8.self)
        }
    }
}
