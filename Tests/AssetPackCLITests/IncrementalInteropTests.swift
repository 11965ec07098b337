#if SystemLibraries  // the default configuration only: see Package.swift
import AssetPack
import AssetPackTestSupport
import Foundation
import Testing

/// An incremental re-pack (unchanged entries copied as they were, the changed one packed anew,
/// the manifest re-encrypted) still opens in 7-Zip and pyzipper.
@Suite struct IncrementalInteropTests {
    @Test(.slow, .enabled(if: sevenZip != nil && hasPyzipper, "needs 7-Zip (7zz) and pyzipper"))
    func anIncrementalRepackOpensInSevenZipAndPyzipper() throws {
        let dir = TemporaryDirectory()
        var tree = InteropTests.tree
        tree["big/stored.bin"] = testBytes(5 << 20, seed: 11)  // written in pieces
        let src = try dir.write(tree, under: "src")
        let ours = dir.appending("ours.zip").path
        #expect(try CLI.run(["pack", src.path, "-o", ours], password: InteropTests.password).status == 0)
        let changed = Array("changed, and longer than before\n".utf8)
        try Data(changed).write(to: src.appendingPathComponent("nineteen.txt"))
        tree["nineteen.txt"] = changed
        let repack = try CLI.run(["pack", src.path, "-o", ours], password: InteropTests.password)
        #expect(repack.status == 0, "\(repack.stderr)")
        let reader = try ZipPackReader(path: ours, credential: .password(InteropTests.password))
        #expect(reader.entries.count == tree.count)

        try runTool(sevenZip!, ["t", "-p\(InteropTests.password)", ours], in: dir.url)
        for (path, bytes) in tree {
            let out = try runTool(sevenZip!, ["x", "-so", "-p\(InteropTests.password)", ours, path], in: dir.url)
            #expect([UInt8](out) == bytes, "7-Zip read \(path) differently")
        }
        let script = """
            import hashlib, sys, pyzipper
            with pyzipper.AESZipFile(sys.argv[1]) as z:
                z.setpassword(sys.argv[2].encode())
                for n in sorted(z.namelist()):
                    print(n + "\\t" + hashlib.sha256(z.read(n)).hexdigest())
            """
        let out = String(
            decoding: try runTool(which("python3")!, ["-c", script, ours, InteropTests.password], in: dir.url),
            as: UTF8.self)
        var read: [String: String] = [:]
        for line in out.split(separator: "\n") {
            let parts = line.split(separator: "\t")
            read[String(parts[0])] = String(parts[1])
        }
        for (path, bytes) in tree {
            #expect(read[path] == sha256Hex(bytes), "pyzipper read \(path) differently")
        }
        #expect(read[".assetpack/manifest"] != nil)  // other tools see the manifest as a file
    }
}

/// SHA-256 in hex, through the system's `sha256sum` (this test target does not link AssetPackCrypto).
private func sha256Hex(_ bytes: [UInt8]) -> String {
    let dir = TemporaryDirectory()
    let file = dir.appending("x")
    _ = FileManager.default.createFile(atPath: file.path, contents: Data(bytes))
    let out = (try? runTool("/usr/bin/sha256sum", [file.path], in: dir.url)) ?? Data()
    return String(String(decoding: out, as: UTF8.self).prefix(64))
}
#endif
