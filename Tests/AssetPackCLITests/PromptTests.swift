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
                if let range = text.range(of: answer.prompt, range: text.index(text.startIndex, offsetBy: searchFrom)..<text.endIndex) {
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
