#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// The full path of an executable on PATH, if any.
func which(_ name: String) -> String? {
    for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
        let path = "\(dir)/\(name)"
        if FileManager.default.isExecutableFile(atPath: path) { return path }
    }
    return nil
}

/// Runs a tool in `dir`, requiring exit 0.
@discardableResult
func runTool(_ tool: String, _ arguments: [String], in dir: URL, stdin: Data? = nil) throws -> Data {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tool)
    process.arguments = arguments
    process.currentDirectoryURL = dir
    let out = Pipe()
    process.standardOutput = out
    process.standardError = FileHandle.nullDevice
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let data = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw AssetPackError(.io, "\(tool) \(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
    }
    return data
}

let sevenZip = which("7zz") ?? which("7z")
let infoZip = which("zip")
let infoUnzip = which("unzip")
let hasPyzipper: Bool = {
    guard let python = which("python3") else { return false }
    return (try? runTool(python, ["-c", "import pyzipper"], in: URL(fileURLWithPath: "/"))) != nil
}()

/// Archives made by other tools read byte-identical through `assetpack cat`, and ours open in theirs.
@Suite struct InteropTests {
    static let password = "interop-Password-42"  // 7-Zip refuses non-ASCII zip passwords
    static let tree: [String: [UInt8]] = [
        "small.txt": Array("tiny".utf8),  // below libzip's 20-byte AE-2 threshold
        "nineteen.txt": Array("nineteen bytes here".utf8),
        "text/level.json": textBytes(120_000, seed: 4),
        "media/noise.bin": testBytes(300_000, seed: 5),
        "naïve/日本.txt": Array("non-ASCII name\n".utf8),
    ]

    /// `AESBlockEncryptor`'s swift-crypto backend (AES-CFB decryption yielding the blocks), for a run.
    static let swiftCryptoBlocks = ["ASSETPACK_AES_BLOCKS": "swift-crypto"]

    /// WinZip AES through both keystream backends, both ways: a pack written through the
    /// swift-crypto blocks reads through libcrypto's and through libzip's own decoder, and one
    /// written through libcrypto's reads through swift-crypto's (issue 38: the portable build's path).
    @Test(arguments: [PackEncryption.aes256])
    func packsWrittenThroughEitherKeystreamBackendReadThroughTheOther(encryption: PackEncryption) throws {
        let dir = TemporaryDirectory()
        let src = try dir.write(Self.tree, under: "src")
        let portable = dir.appending("portable.zip").path
        let packed = try CLI.run(
            ["pack", src.path, "-o", portable, "--fresh"], password: Self.password, environment: Self.swiftCryptoBlocks)
        #expect(packed.status == 0, "\(packed.stderr)")
        try expectReadable(portable)
        let native = dir.appending("native.zip").path
        #expect(try CLI.run(["pack", src.path, "-o", native, "--fresh"], password: Self.password).status == 0)
        try expectReadable(native)
    }

    /// Reads every entry of `archive` through the CLI and compares with `tree`; then reads it
    /// through both decoders in-process and requires identical bytes wherever libzip succeeds.
    func expectReadable(_ archive: String, tree: [String: [UInt8]] = tree, libzipRejectsAE2: Bool = false) throws {
        for (path, bytes) in tree {
            let run = try CLI.run(["cat", archive, path], password: Self.password)
            #expect(run.status == 0, "\(archive) \(path): \(run.stderr)")
            #expect(run.stdout == bytes, "\(archive) \(path)")
            // The keystream through swift-crypto (what a build without libcrypto uses) too.
            let portable = try CLI.run(
                ["cat", archive, path], password: Self.password, environment: Self.swiftCryptoBlocks)
            #expect(portable.status == 0 && portable.stdout == bytes, "\(archive) \(path), swift-crypto blocks")
        }
        let bulk = try ZipPackReader(path: archive, credential: .password(Self.password))
        let libzip = try ZipPackReader(path: archive, credential: .password(Self.password), decoder: .libzip)
        for entry in bulk.entries {
            let (ours, timing) = try bulk.readTimed(entry.path)
            if entry.encryption != .none && entry.encryption != .zipCrypto { #expect(timing.decoder == "bulk-aes") }
            do {
                let (theirs, libzipTiming) = try libzip.readTimed(entry.path)
                #expect(theirs == ours, "decoders disagree on \(entry.path)")
                #expect(libzipTiming.decoder == "libzip")
            } catch let error as AssetPackError {
                // libzip 1.7.3 rejects standard AE-2 entries (CRC 0) of 20 bytes and more.
                #expect(
                    libzipRejectsAE2 && entry.size >= 20 && error.code == .integrityFailure, "\(entry.path): \(error)")
            }
        }
    }

    @Test(
        .slow,
        .enabled(if: sevenZip != nil, "7-Zip (Debian package 7zip) is not installed"),
        arguments: [
            ["-mem=AES256", "-mx=0"], ["-mem=AES256", "-mx=5"], ["-mem=AES128", "-mx=5"], ["-mem=AES192", "-mx=0"],
        ])
    func readsSevenZipAESArchives(flags: [String]) throws {
        let dir = TemporaryDirectory()
        let src = try dir.write(Self.tree, under: "src")
        try runTool(
            sevenZip!, ["a", "-tzip", "-p\(Self.password)"] + flags + [dir.appending("7z.zip").path, "."], in: src)
        try expectReadable(dir.appending("7z.zip").path, libzipRejectsAE2: true)
    }

    @Test(.enabled(if: infoZip != nil, "Info-ZIP zip is not installed"))
    func readsInfoZipZipCryptoArchivesWithUnflaggedUTF8Names() throws {
        let dir = TemporaryDirectory()
        let src = try dir.write(Self.tree, under: "src")
        try runTool(infoZip!, ["-q", "-r", "-e", "-P", Self.password, dir.appending("iz.zip").path, "."], in: src)
        try expectReadable(dir.appending("iz.zip").path)
    }

    @Test(.enabled(if: hasPyzipper, "pyzipper is not installed (pip install pyzipper)"))
    func readsPyzipperAESArchives() throws {
        let dir = TemporaryDirectory()
        let src = try dir.write(Self.tree, under: "src")
        let script = """
            import os, sys, pyzipper
            with pyzipper.AESZipFile(sys.argv[1], 'w', compression=pyzipper.ZIP_DEFLATED, encryption=pyzipper.WZ_AES) as z:
                z.setpassword(sys.argv[2].encode())
                for root, _, files in os.walk('.'):
                    for f in sorted(files):
                        p = os.path.join(root, f)[2:]
                        z.write(p, p)
            """
        try runTool(which("python3")!, ["-c", script, dir.appending("py.zip").path, Self.password], in: src)
        try expectReadable(dir.appending("py.zip").path, libzipRejectsAE2: true)
    }

    @Test(.enabled(if: sevenZip != nil, "7-Zip (Debian package 7zip) is not installed"))
    func ourPacksOpenInSevenZip() throws {
        let dir = TemporaryDirectory()
        let src = try dir.write(Self.tree, under: "src")
        let ours = dir.appending("ours.zip").path
        #expect(try CLI.run(["pack", src.path, "-o", ours], password: Self.password).status == 0)
        try runTool(sevenZip!, ["t", "-p\(Self.password)", ours], in: dir.url)
        for (path, bytes) in Self.tree {
            let out = try runTool(sevenZip!, ["x", "-so", "-p\(Self.password)", ours, path], in: dir.url)
            #expect([UInt8](out) == bytes, "7-Zip read \(path) differently")
        }
    }

    /// Info-ZIP's unzip reads what it can: our ZipCrypto packs (libzip writes those) and our
    /// unencrypted ones (our own writer); it has no WinZip AES.
    @Test(
        .enabled(if: infoUnzip != nil, "Info-ZIP unzip is not installed"),
        arguments: [PackEncryption.zipCrypto, .none])
    func ourPacksOpenInInfoZipUnzip(encryption: PackEncryption) throws {
        let dir = TemporaryDirectory()
        let src = try dir.write(Self.tree, under: "src")
        let ours = dir.appending("ours.zip").path
        let packed = try CLI.run(
            ["pack", src.path, "-o", ours, "--encryption", encryption.rawValue], password: Self.password)
        #expect(packed.status == 0, "\(packed.stderr)")
        let password = encryption == .none ? [] : ["-P", Self.password]
        try runTool(infoUnzip!, ["-tqq"] + password + [ours], in: dir.url)
        for (path, bytes) in Self.tree {
            let out = try runTool(infoUnzip!, ["-p"] + password + [ours, path], in: dir.url)
            #expect([UInt8](out) == bytes, "unzip read \(path) differently (\(encryption))")
        }
    }

    @Test(.slow, .enabled(if: hasPyzipper, "pyzipper is not installed (pip install pyzipper)"))
    func ourPacksOpenInPyzipper() throws {
        let dir = TemporaryDirectory()
        let src = try dir.write(Self.tree, under: "src")
        let ours = dir.appending("ours.zip").path
        #expect(try CLI.run(["pack", src.path, "-o", ours], password: Self.password).status == 0)
        let script = """
            import sys, pyzipper
            with pyzipper.AESZipFile(sys.argv[1]) as z:
                z.setpassword(sys.argv[2].encode())
                for n in sorted(z.namelist()):
                    print(n + "\\t" + z.read(n).hex())
            """
        let out = String(
            decoding: try runTool(which("python3")!, ["-c", script, ours, Self.password], in: dir.url), as: UTF8.self)
        let read = Dictionary(
            uniqueKeysWithValues: out.split(separator: "\n").map { line in
                let parts = line.split(separator: "\t", omittingEmptySubsequences: false)
                return (String(parts[0]), String(parts.count > 1 ? parts[1] : ""))
            })
        for (path, bytes) in Self.tree {
            let hex = bytes.map { String(format: "%02x", $0) }.joined()
            #expect(read[path] == hex, "pyzipper read \(path) differently")
        }
    }
}
#endif
