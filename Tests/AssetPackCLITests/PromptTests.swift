#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// The password prompt, on a real pseudo-terminal (util-linux `script` provides one).
@Suite struct PromptTests {
    static let script = "/usr/bin/script"

    /// Runs `assetpack ARGS` on a pty, answering each prompt (waiting until it shows, as a person
    /// would) with the given text; returns the exit status and everything the terminal showed.
    func onTerminal(_ arguments: [String], answering answers: [(prompt: String, text: String)]) throws
        -> (status: Int32, screen: String)
    {
        let command = ([CLI.binary.path] + arguments).map { "'\($0)'" }.joined(separator: " ")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.script)
        process.arguments = ["-qec", command, "/dev/null"]
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        process.environment = ProcessInfo.processInfo.environment.filter { $0.key != "ASSETPACK_PASSWORD" }
        try process.run()
        var screen = Data()
        var searchFrom = 0
        for answer in answers {
            while true {
                let text = String(decoding: screen, as: UTF8.self)
                if let range = text.range(
                    of: answer.prompt, range: text.index(text.startIndex, offsetBy: searchFrom)..<text.endIndex)
                {
                    searchFrom = text.distance(from: text.startIndex, to: range.upperBound)
                    break
                }
                let more = stdout.fileHandleForReading.availableData
                if more.isEmpty { break }  // the program ended without asking
                screen.append(more)
            }
            stdin.fileHandleForWriting.write(Data(answer.text.utf8))
        }
        screen.append(stdout.fileHandleForReading.readDataToEndOfFile())
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: screen, as: UTF8.self))
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: script), "util-linux script is not installed"))
    func promptsWithoutEchoOnATerminal() throws {
        let dir = TemporaryDirectory()
        let pack = try CLITests.pack(["a.txt": Array("secret asset".utf8)], in: dir)
        let ok = try onTerminal(["cat", pack, "a.txt"], answering: [("Password:", "\(CLITests.password)\n")])
        #expect(ok.status == 0)
        #expect(ok.screen.contains("Password:"))
        #expect(ok.screen.contains("secret asset"))
        #expect(!ok.screen.contains(CLITests.password), "the password was echoed")
        let wrong = try onTerminal(["cat", pack, "a.txt"], answering: [("Password:", "nope\n")])
        #expect(wrong.status == 2)
    }

    /// Echo must be off before the prompt is written: someone who types the password the moment
    /// "Password:" appears must not see it echoed. The test stops the terminal's output (as ^S
    /// does), so the program's write of the prompt blocks until the test resumes it; it then waits
    /// for echo to go off. With echo turned off first this always happens, and the password typed
    /// in the same instant as the prompt appears is never echoed; with the prompt written first,
    /// echo is still on while the prompt is pending, every time.
    @Test(.slow) func echoIsOffBeforeThePromptAppears() throws {
        let dir = TemporaryDirectory()
        let pack = try CLITests.pack(["a.txt": Array("secret asset".utf8)], in: dir)
        for round in 1...20 {
            let terminal = try PseudoTerminal()
            defer { terminal.close() }
            terminal.stopOutput()
            let child = try terminal.spawn(["cat", pack, "a.txt"])
            let echoWentOff = terminal.waitUntil(seconds: 10) { !terminal.echo }
            #expect(echoWentOff, "round \(round): echo was still on while the prompt was being written")
            terminal.type("\(CLITests.password)\n")
            terminal.startOutput()
            let (status, output) = child.finish()
            let screen = terminal.drain()
            #expect(status == 0, "round \(round): \(screen)")
            #expect(output == Array("secret asset".utf8), "round \(round)")
            #expect(screen.contains("Password:"), "round \(round): \(screen)")
            #expect(!screen.contains(CLITests.password), "round \(round): the password was echoed: \(screen)")
            if !echoWentOff || status != 0 || screen.contains(CLITests.password) { break }
        }
    }

    /// Input typed before the prompt (type-ahead) is kept, not flushed, when echo goes off.
    @Test func typedAheadPasswordIsKept() throws {
        let dir = TemporaryDirectory()
        let pack = try CLITests.pack(["a.txt": Array("secret asset".utf8)], in: dir)
        let terminal = try PseudoTerminal()
        defer { terminal.close() }
        terminal.type("\(CLITests.password)\n")
        let (status, output) = try terminal.spawn(["cat", pack, "a.txt"]).finish()
        #expect(status == 0, "\(terminal.drain())")
        #expect(output == Array("secret asset".utf8))
    }

    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: script), "util-linux script is not installed"))
    func packAsksTwiceAndRefusesAMismatch() throws {
        let dir = TemporaryDirectory()
        let src = try dir.write(["a.txt": [1]], under: "src")
        let out = dir.appending("p.zip").path
        let mismatch = try onTerminal(
            ["pack", src.path, "-o", out], answering: [("Password:", "one\n"), ("Repeat password:", "two\n")])
        #expect(mismatch.status == 2)
        #expect(!FileManager.default.fileExists(atPath: out))
        let ok = try onTerminal(
            ["pack", src.path, "-o", out], answering: [("Password:", "same\n"), ("Repeat password:", "same\n")])
        #expect(ok.status == 0)
        #expect(try CLI.run(["cat", out, "a.txt"], password: "same").stdout == [1])
    }
}

/// A pseudo-terminal owned by the test: a child gets its slave side as standard input and
/// standard error (standard output is a pipe), and the test types into and reads the master side.
final class PseudoTerminal {
    let master: Int32
    let slave: Int32

    private typealias IntFunction = @convention(c) (Int32) -> Int32
    private typealias NameFunction = @convention(c) (Int32, UnsafeMutablePointer<CChar>?, Int) -> Int32
    /// posix_openpt and friends are not in Swift's Glibc module; look them up in libc.
    private static func libc<T>(_ name: String, _ type: T.Type) -> T {
        unsafeBitCast(dlsym(dlopen(nil, RTLD_NOW), name)!, to: type)
    }

    init() throws {
        master = Self.libc("posix_openpt", IntFunction.self)(O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard master >= 0, Self.libc("grantpt", IntFunction.self)(master) == 0,
            Self.libc("unlockpt", IntFunction.self)(master) == 0
        else { throw AssetPackError(.io, "cannot open a pseudo-terminal") }
        var name = [CChar](repeating: 0, count: 128)
        guard Self.libc("ptsname_r", NameFunction.self)(master, &name, name.count) == 0 else {
            throw AssetPackError(.io, "ptsname_r failed")
        }
        let path = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        slave = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard slave >= 0 else { throw AssetPackError(.io, "cannot open \(path)") }
        _ = fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK)
    }

    func close() {
        Glibc.close(slave)
        Glibc.close(master)
    }

    /// Whether the terminal echoes input now.
    var echo: Bool {
        var t = termios()
        tcgetattr(slave, &t)
        return t.c_lflag & tcflag_t(ECHO) != 0
    }

    /// Suspends output, as ^S does: a program's write to the terminal blocks until `startOutput`.
    func stopOutput() { tcflow(slave, TCOOFF) }
    func startOutput() { tcflow(slave, TCOON) }

    /// Types `text` (the line discipline echoes it if echo is on when it arrives).
    func type(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
    }

    /// Polls `condition` every millisecond for up to `seconds`.
    func waitUntil(seconds: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(1000)
        }
        return condition()
    }

    /// Everything the terminal showed so far.
    func drain() -> String {
        var screen: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            var fds = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
            guard poll(&fds, 1, 200) > 0 else { break }
            let n = buffer.withUnsafeMutableBytes { read(master, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            screen += buffer[0..<n]
        }
        return String(decoding: screen, as: UTF8.self)
    }

    struct Child {
        let process: Process
        let output: Pipe
        /// Waits for the child (killing it after 60 s) and returns its status and standard output.
        func finish() -> (Int32, [UInt8]) {
            let pid = process.processIdentifier
            let watchdog = DispatchWorkItem { kill(pid, SIGKILL) }
            DispatchQueue.global().asyncAfter(deadline: .now() + 60, execute: watchdog)
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            watchdog.cancel()
            return (process.terminationStatus, [UInt8](data))
        }
    }

    /// Runs `assetpack ARGS` on this terminal, without a password in the environment.
    func spawn(_ arguments: [String]) throws -> Child {
        let process = Process()
        process.executableURL = CLI.binary
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.filter { $0.key != "ASSETPACK_PASSWORD" }
        let terminal = FileHandle(fileDescriptor: slave, closeOnDealloc: false)
        let output = Pipe()
        process.standardInput = terminal
        process.standardError = terminal
        process.standardOutput = output
        try process.run()
        return Child(process: process, output: output)
    }
}
#endif
